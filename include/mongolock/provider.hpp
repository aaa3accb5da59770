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
#include "mongolock/election.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/lock.hpp"
#include "mongolock/multi_lock.hpp"
#include "mongolock/options.hpp"
#include "mongolock/rw_lock.hpp"
#include "mongolock/semaphore.hpp"
#include "mongolock/stats.hpp"

namespace mongolock {

// What the lock document says right now (for inspection; it may change immediately).
struct lock_info {
  std::string name;
  bool exists = false;          // false: this name was never used (or its document was cleaned up)
  bool held = false;
  std::string owner;            // empty when free; "(force-released)": broken (force_mode)
  std::int64_t fencing_token = 0;  // last token issued
  std::int64_t heartbeat = 0;   // changes at every take, renewal and release (a random value: compare, never count)
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
  // An election's leader value (election.hpp), once its holder proclaimed one; else empty.
  std::string value;
  // The fencing token of the last run recorded as completed (lease::async_record_completion),
  // 0 if none; kept across takes and releases (a scheduled job's record, docs/design.md section 13).
  std::int64_t last_completed_token = 0;
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

// Thread safety: a provider may be used from any thread (its state is behind strands and
// atomics); create_lock, options and snapshot are plain calls. Handlers run on the executor
// associated with the completion handler, defaulting to the client's executor.

class provider {
 public:
  // Throws system_error: errc::invalid_collection or errc::invalid_options (message says why).
  provider(client& c, std::string database, std::string collection, lock_options opts = {});

  lock create_lock(std::string name) const { return lock(impl_, std::move(name), nullptr, true); }
  // A lock with options of its own (expiry, renewal, safety margin, backoff, acquire timeout),
  // e.g. `auto o = p.options(); o.expiry = 5min; p.create_lock("report", o)`. Throws
  // system_error(errc::invalid_options) with the reason if they are invalid (validate), or if a
  // storage field (durability, write_timeout, idle_cleanup: the collection's) differs from this
  // provider's; the reason names the field.
  lock create_lock(std::string name, const lock_options& options) const;
  // Several locks taken all-or-nothing, in one order that cannot deadlock (multi_lock.hpp).
  multi_lock create_multi_lock(std::vector<std::string> names) const {
    return multi_lock(create_lock(std::string()), std::move(names));
  }
  // Leader election on one lock name (election.hpp). The name is the election's lock: a lock of
  // the same name taken elsewhere also blocks campaigns.
  election create_election(std::string name) const { return election(create_lock(std::move(name))); }
  // At most `permits` holders of `name` at a time, each with a permit of its own (semaphore.hpp).
  // Checked when acquiring: errc::invalid_options outside 1..limits::max_permits.
  semaphore create_semaphore(std::string name, int permits) const {
    return semaphore(create_lock(std::string()), std::move(name), permits);
  }
  // Many readers or one writer (rw_lock.hpp). Options are checked when acquiring.
  rw_lock create_rw_lock(std::string name, rw_options o = {}) const {
    return rw_lock(create_lock(std::string()), std::move(name), o);
  }
  const lock_options& options() const noexcept;
  stats snapshot() const noexcept;

  // Releases every lease this provider currently holds with one update (one per part under the
  // server's 16 MiB limit: 29,000 leases of 512-byte names fit in one, 30,000 take two); their
  // guarded work is cancelled and they complete async_wait_lost with errc::released. Completion:
  // void(error_code, std::size_t): the number of lock documents freed; on a server error, the
  // error and the number the parts that succeeded freed (the others' documents expire).
  // Cancellation: not supported.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_release_all(Token&& token = {}) {
    return release_all_op(nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_release_all(diagnostics& d, Token&& token = {}) {
    return release_all_op(&d, std::forward<Token>(token));
  }

  // For a clean exit; call it before destroying the client. From the call on, acquisitions of
  // this provider fail with operation_aborted (waiting ones are woken; one inside a server call
  // when that call returns). Then every lease it holds
  // is released (guarded work is cancelled; async_wait_lost completes with errc::released), and
  // the operation waits for the work still under way in the background: a take whose reply came
  // after its acquire was cancelled or timed out (given back), releases being retried, a lost
  // lease's delayed release. Completion: void(error_code): {} once all of it is done; the error
  // of a release that gave up (that lock then expires on its own); or errc::timeout if work is
  // still under way after lock_options::expiry (longer while a release retried for a take of
  // unknown outcome is still trying: its last try comes 5.25 s and three replies after its first).
  // Idempotent. Cancellation: not supported.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_shutdown(Token&& token = {}) {
    return shutdown_op(nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_shutdown(diagnostics& d, Token&& token = {}) {
    return shutdown_op(&d, std::forward<Token>(token));
  }

  // Reads one lock document from the primary. Completion: void(error_code, lock_info);
  // errc::invalid_name for a bad name, else server errors. Cancellation: terminal (partial and
  // total are ignored; the read has no side effect).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_inspect(std::string name, Token&& token = {}) {
    return inspect_op(std::move(name), nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_inspect(std::string name, diagnostics& d, Token&& token = {}) {
    return inspect_op(std::move(name), &d, std::forward<Token>(token));
  }
  // The same with read concern majority: only what a failover cannot roll back, for a decision
  // taken on what was seen (a scheduled job's sightings, docs/design.md section 13).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_inspect_committed(std::string name, Token&& token = {}) {
    return inspect_op(std::move(name), nullptr, std::forward<Token>(token), true);
  }
  template <class Token = boost::asio::deferred_t>
  auto async_inspect_committed(std::string name, diagnostics& d, Token&& token = {}) {
    return inspect_op(std::move(name), &d, std::forward<Token>(token), true);
  }

  // Reads every lock document of the collection. Completion: void(error_code,
  // std::vector<lock_info>). Cancellation: terminal (partial and total are ignored).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_list(Token&& token = {}) {
    return list_op(nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_list(diagnostics& d, Token&& token = {}) {
    return list_op(&d, std::forward<Token>(token));
  }

  // Operator override: takes the lock from whoever holds it (force_mode: by default new holders
  // wait out the old holder's lease). Completion: void(error_code, std::string): the removed
  // owner id; empty if there was nothing to take (free, or already broken and not `immediate`).
  // The holder notices at its next renewal and loses the lease. Errors: errc::invalid_name,
  // server errors. Cancellation: not supported.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_force_release(std::string name, Token&& token = {}) {
    return async_force_release(std::move(name), force_mode::wait_out_holder, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_force_release(std::string name, force_mode mode, Token&& token = {}) {
    return force_release_op(std::move(name), mode, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_force_release(std::string name, force_mode mode, diagnostics& d, Token&& token = {}) {
    return force_release_op(std::move(name), mode, &d, std::forward<Token>(token));
  }

 private:
  friend struct detail::access;
  using impl_ptr = std::shared_ptr<detail::provider_impl>;
  explicit provider(impl_ptr p) noexcept : impl_(std::move(p)) {}
  template <class... T>
  using handler = boost::asio::any_completion_handler<void(boost::system::error_code, T...)>;
  // `d`: the caller's diagnostics, or null.
  static void start_release_all(impl_ptr, diagnostics* d, handler<std::size_t>);
  static void start_shutdown(impl_ptr, diagnostics* d, handler<>);
  static void start_inspect(impl_ptr, std::string name, bool committed, diagnostics* d, handler<lock_info>);
  static void start_list(impl_ptr, diagnostics* d, handler<std::vector<lock_info>>);
  static void start_force_release(impl_ptr, std::string name, force_mode, diagnostics* d, handler<std::string>);

  template <class Token>
  auto release_all_op(diagnostics* d, Token&& token) {
    return detail::async_op<void(boost::system::error_code, std::size_t)>(
        with_executor([](auto h, impl_ptr p, diagnostics* diag) { start_release_all(std::move(p), diag, std::move(h)); }),
        token, impl_, d);
  }

  template <class Token>
  auto shutdown_op(diagnostics* d, Token&& token) {
    return detail::async_op<void(boost::system::error_code)>(
        with_executor([](auto h, impl_ptr p, diagnostics* diag) { start_shutdown(std::move(p), diag, std::move(h)); }),
        token, impl_, d);
  }

  template <class Token>
  auto inspect_op(std::string name, diagnostics* d, Token&& token, bool committed = false) {
    return detail::async_op<void(boost::system::error_code, lock_info)>(
        with_executor([](auto h, impl_ptr p, std::string n, bool majority, diagnostics* diag) {
          start_inspect(std::move(p), std::move(n), majority, diag, std::move(h));
        }),
        token, impl_, std::move(name), committed, d);
  }

  template <class Token>
  auto list_op(diagnostics* d, Token&& token) {
    return detail::async_op<void(boost::system::error_code, std::vector<lock_info>)>(
        with_executor([](auto h, impl_ptr p, diagnostics* diag) { start_list(std::move(p), diag, std::move(h)); }),
        token, impl_, d);
  }

  template <class Token>
  auto force_release_op(std::string name, force_mode mode, diagnostics* d, Token&& token) {
    return detail::async_op<void(boost::system::error_code, std::string)>(
        with_executor([](auto h, impl_ptr p, std::string n, force_mode m, diagnostics* diag) {
          start_force_release(std::move(p), std::move(n), m, diag, std::move(h));
        }),
        token, impl_, std::move(name), mode, d);
  }

  // The initiation object: `start` plus this provider's executor (initiation.hpp).
  template <class Start>
  auto with_executor(Start start) const {
    return detail::initiation(lock::executor_of(*impl_), std::move(start));
  }
  impl_ptr impl_;
};

}  // namespace mongolock
