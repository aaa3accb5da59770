#pragma once
// Plain configuration structs. Every field has a documented default; validate_*() returns an
// errc::invalid_options error whose message names the offending field instead of asserting.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "mongolock/limits.hpp"

namespace mongolock {

enum class log_level { debug, info, warning, error };

// Called from library threads; must be thread-safe and must not block for long.
using log_function = std::function<void(log_level, std::string_view)>;

enum class write_concern {
  majority,      // default: a lock write is acknowledged only once a majority has it
  acknowledged,  // w:1, faster, but a failover can roll back an acquisition
};

struct client_options {
  // Threads that run the blocking libmongoc calls (also the driver pool's maxPoolSize).
  std::size_t worker_threads = 4;
  // Bounds on every driver call, applied unless the URI sets them itself.
  std::chrono::milliseconds server_selection_timeout{5000};
  std::chrono::milliseconds socket_timeout{10000};
  log_function log;  // silent when empty
  // Written into every lock this client takes, with the host name and process id, so that
  // `status`, `list` and async_inspect can say who holds it. At most 128 bytes.
  std::string label;
  // Lines below this level are neither built nor delivered. Failures an operation returns are
  // logged at debug level only: the caller already has them.
  log_level log_threshold = log_level::info;
};

// A provider's options (provider's constructor), and a lock's own where they differ from its
// provider's (provider::create_lock(name, options)): a 5-minute lease for a nightly report and
// 10 s for request handlers, from one provider. Start a lock's from the provider's
// (`auto o = p.options(); o.expiry = 5min;`). The storage fields (durability, write_timeout,
// idle_cleanup) belong to the provider's collection: a lock's must equal its provider's.
struct lock_options {
  std::chrono::milliseconds expiry{30000};         // lease length
  std::chrono::milliseconds renew_every{0};        // 0 = expiry / 3; must be below expiry
  std::chrono::milliseconds safety_margin{0};      // 0 = expiry / 10: clock-rate slack on both sides
  std::chrono::milliseconds backoff_min{10};       // first retry delay while waiting
  std::chrono::milliseconds backoff_max{800};      // cap of the growing, jittered retry delay
  std::chrono::milliseconds acquire_timeout{0};    // 0 = wait until acquired or cancelled
  write_concern durability = write_concern::majority;
  std::chrono::milliseconds write_timeout{10000};  // wtimeout for majority writes
  std::chrono::seconds idle_cleanup{86400};  // TTL index: free documents idle this long vanish

  std::chrono::milliseconds effective_renew_every() const noexcept {
    return renew_every.count() > 0 ? renew_every : expiry / 3;
  }
  std::chrono::milliseconds effective_margin() const noexcept {
    return safety_margin.count() > 0 ? safety_margin : expiry / 10;
  }
};

// lock::async_try_acquire's options.
struct try_options {
  // The whole try answers within this, server calls included (errc::timeout if the server did not
  // answer; server_unavailable if no server has answered this provider yet). 0: no bound of its
  // own, only the driver's timeouts (client_options).
  std::chrono::milliseconds within{0};
  // Opt-in. A holder whose own clock says it last renewed more than 3 expiries ago has probably
  // crashed, and a one-look try would find it "busy" forever. With this set, the try watches its
  // heartbeat for one expiry + safety margin (cut short by `within`) and takes the lock if it did
  // not move; busy if it moved. The holder's clock only decides whether to watch, never who holds
  // the lock: a wrong clock costs one bounded wait, not safety. A force-released lock's
  // placeholder owner is watched the same way (a plain try finds it busy until taken).
  bool confirm_silent_holder = false;
};

// Both return {} when valid; otherwise errc::invalid_options and a message naming the field.
boost::system::error_code validate(const client_options&, std::string* why = nullptr);
boost::system::error_code validate(const lock_options&, std::string* why = nullptr);

// Lock names: 1..512 bytes of valid UTF-8 without NUL or '#' ('#' names the permits of a
// semaphore or rw_lock: NAME#1, NAME#w). Returns errc::invalid_name otherwise.
boost::system::error_code validate_lock_name(std::string_view name, std::string* why = nullptr);
// Database / collection names as MongoDB accepts them. Returns errc::invalid_collection.
boost::system::error_code validate_namespace(std::string_view database, std::string_view collection,
                                             std::string* why = nullptr);

}  // namespace mongolock
