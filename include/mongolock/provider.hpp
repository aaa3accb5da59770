#pragma once
// A provider binds a client to one lock collection and one set of lock options.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mongolock/client.hpp"
#include "mongolock/initiation.hpp"
#include "mongolock/lock.hpp"
#include "mongolock/options.hpp"
#include "mongolock/stats.hpp"

namespace mongolock {

// What the lock document says right now (for inspection; it may change immediately).
struct lock_info {
  std::string name;
  bool exists = false;          // false: this name was never used (or its document was cleaned up)
  bool held = false;
  std::string owner;            // empty when free
  std::int64_t fencing_token = 0;  // last token issued
  std::int64_t heartbeat = 0;   // renewal counter of the current holder
  std::chrono::milliseconds expiry{0};  // the holder's lease length
  // The holder's wall clock when it acquired (ms since 1970). Informational only: that clock may
  // be wrong, and the lock never uses it.
  std::int64_t acquired_at_ms = 0;
  // The holder's wall clock at its last renewal (ms since 1970): a hint of how long it has been
  // silent, as wrong as that clock. Expiry never depends on it.
  std::int64_t renewed_at_ms = 0;
  // Who holds it, for operators: host name, process id and client_options::label.
  std::string host;
  std::int64_t pid = 0;
  std::string label;
};

namespace detail {
using count_handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;
using info_handler = boost::asio::any_completion_handler<void(boost::system::error_code, lock_info)>;
using list_handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::vector<lock_info>)>;
using force_handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::string)>;
using shutdown_handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;
void start_release_all(std::shared_ptr<provider_impl>, count_handler);
void start_shutdown(std::shared_ptr<provider_impl>, shutdown_handler);
void start_inspect(std::shared_ptr<provider_impl>, std::string name, info_handler);
void start_list(std::shared_ptr<provider_impl>, list_handler);
void start_force_release(std::shared_ptr<provider_impl>, std::string name, force_handler);
}  // namespace detail

class provider {
 public:
  // Throws system_error: errc::invalid_collection or errc::invalid_options (message says why).
  provider(client& c, std::string database, std::string collection, lock_options opts = {});

  lock create_lock(std::string name) const { return lock(impl_, std::move(name)); }
  // A lock with its own timing (expiry, renewal, backoff, acquire timeout: lock_timing), the
  // rest as this provider's. Throws system_error(errc::invalid_options), with the reason, if
  // the combination is invalid (e.g. an expiry below the provider's explicit renew_every).
  lock create_lock(std::string name, const lock_timing& timing) const;
  const lock_options& options() const noexcept;
  stats snapshot() const noexcept;

  // Releases every lease this provider currently holds with one update; their guarded work is
  // cancelled and they complete async_wait_lost with errc::released. Completes with the number of
  // lock documents freed. Cancellation: not supported.
  template <class Token = boost::asio::deferred_t>
  auto async_release_all(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        with_executor(
            [](auto h, std::shared_ptr<detail::provider_impl> p) { detail::start_release_all(std::move(p), std::move(h)); }),
        token, impl_);
  }

  // For a clean exit; call it before destroying the client. From the call on, acquisitions of
  // this provider fail with operation_aborted (waiting ones are woken). Then every lease it holds
  // is released (guarded work is cancelled; async_wait_lost completes with errc::released), and
  // the operation waits for the work still under way in the background: a take whose reply came
  // after its acquire was cancelled or timed out (given back), releases being retried, a lost
  // lease's delayed release. Completes with {} once all of it is done; with the error of a
  // release that gave up (that lock then expires on its own); or with errc::timeout if work is
  // still under way after lock_options::expiry. Idempotent. Cancellation: not supported.
  template <class Token = boost::asio::deferred_t>
  auto async_shutdown(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        with_executor(
            [](auto h, std::shared_ptr<detail::provider_impl> p) { detail::start_shutdown(std::move(p), std::move(h)); }),
        token, impl_);
  }

  // Reads one lock document (errc::invalid_name for a bad name). Cancellation: any type.
  template <class Token = boost::asio::deferred_t>
  auto async_inspect(std::string name, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, lock_info)>(
        with_executor([](auto h, std::shared_ptr<detail::provider_impl> p, std::string n) {
          detail::start_inspect(std::move(p), std::move(n), std::move(h));
        }),
        token, impl_, std::move(name));
  }

  // Reads every lock document of the collection. Cancellation: any type.
  template <class Token = boost::asio::deferred_t>
  auto async_list(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::vector<lock_info>)>(
        with_executor(
            [](auto h, std::shared_ptr<detail::provider_impl> p) { detail::start_list(std::move(p), std::move(h)); }),
        token, impl_);
  }

  // Operator override: frees the lock whoever holds it; completes with the removed owner id
  // (empty if the lock was free). The holder notices at its next renewal and loses the lease.
  template <class Token = boost::asio::deferred_t>
  auto async_force_release(std::string name, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::string)>(
        with_executor([](auto h, std::shared_ptr<detail::provider_impl> p, std::string n) {
          detail::start_force_release(std::move(p), std::move(n), std::move(h));
        }),
        token, impl_, std::move(name));
  }

 private:
  // The initiation object: `start` plus this provider's executor (initiation.hpp).
  template <class Start>
  auto with_executor(Start start) const {
    return detail::make_initiation(detail::provider_executor(*impl_), std::move(start));
  }
  std::shared_ptr<detail::provider_impl> impl_;
};

}  // namespace mongolock
