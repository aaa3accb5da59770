#pragma once
// A provider binds a client to one lock collection and one set of lock options.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
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
  std::string owner;            // empty when free; "(force-released)": broken (force_mode)
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

// How async_force_release takes a lock from its holder.
enum class force_mode {
  // The default. The holder loses its lease at its next renewal but may work on until then, so
  // the lock goes to a placeholder owner, "(force-released)", that nobody renews: new holders
  // take over after observing it for one expiry + safety margin, as for a crashed holder, by
  // when the old holder's own deadline has passed. No overlap, at the cost of that wait.
  wait_out_holder,
  // Free at once. A new holder may start before the old one notices (up to one renewal interval
  // of overlap): only for a holder known to be dead, or a lock stuck behind a placeholder.
  immediate,
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
void start_force_release(std::shared_ptr<provider_impl>, std::string name, force_mode, force_handler);
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

  // Operator override: takes the lock from whoever holds it (force_mode: by default new holders
  // wait out the old holder's lease). Completes with the removed owner id; empty if there was
  // nothing to take (free, or already broken and not `immediate`). The holder notices at its next
  // renewal and loses the lease. Errors: errc::invalid_name, server errors. Cancellation: not
  // supported.
  template <class Token = boost::asio::deferred_t>
    requires(!std::is_same_v<std::decay_t<Token>, force_mode>)
  auto async_force_release(std::string name, Token&& token = {}) {
    return async_force_release(std::move(name), force_mode::wait_out_holder, std::forward<Token>(token));
  }

  template <class Token = boost::asio::deferred_t>
  auto async_force_release(std::string name, force_mode mode, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::string)>(
        with_executor([](auto h, std::shared_ptr<detail::provider_impl> p, std::string n, force_mode m) {
          detail::start_force_release(std::move(p), std::move(n), m, std::move(h));
        }),
        token, impl_, std::move(name), mode);
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
