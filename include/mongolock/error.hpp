#pragma once
// Error codes of the "mongolock" category. Every failure the library reports is one of these
// (or boost::asio::error::operation_aborted for a cancelled operation).
#include <boost/system/error_code.hpp>
#include <string>
#include <type_traits>

namespace mongolock {

enum class errc {
  timeout = 1,         // the lock was not acquired within the acquire timeout
  busy,                // try-acquire: someone else holds the lock
  lease_lost,          // the lease expired or was taken over; guarded work was cancelled
  released,            // the lease was released (by this process) and is no longer held
  not_held,            // release of a lease that was never acquired or already released
  invalid_name,        // lock name empty, longer than 512 bytes, not valid UTF-8, or with NUL or '#'
  invalid_collection,  // database or collection name not usable by MongoDB
  invalid_options,     // an options struct failed validation (the message says which field)
  invalid_uri,         // the connection string could not be parsed
  server_unavailable,  // no server could be selected / the connection failed
  server_error,        // the server rejected a command (its message is kept)
  unsupported_server,  // the server is older than the minimum supported version
  ambiguous_result,    // a write's outcome could not be determined, even after re-checking
  not_authorized,      // authentication failed, or the user may not run a command the lock needs
  declaration_mismatch,  // a semaphore or rw_lock name is already declared with another kind or count
  fenced_out,        // a fenced write's token is below the document's fence: nothing was changed
  invalid_document,  // a fenced write's filter or update is not a usable document (the reason says why)
};

// The reason behind an error code, in words (as Boost.MySQL's diagnostics): the server's or the
// driver's message, credentials removed, or the check that failed ("the acquire timeout is
// negative"). Pass one to an operation that takes it; it is written before the handler runs
// (empty on success and on a single lock's busy; a set, a semaphore or a rw_lock that is busy
// names its held member, "lock 'X' is held"; a cancellation or a time limit may leave a short
// reason such as "cancelled") and must outlive the operation. Failures a caller receives are only logged at debug level: this is where they go.
struct diagnostics {
  std::string reason;
};

const boost::system::error_category& category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), category()};
}

}  // namespace mongolock

template <>
struct boost::system::is_error_code_enum<mongolock::errc> : std::true_type {};
