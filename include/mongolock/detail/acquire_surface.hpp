#pragma once
// The acquire overload set of every primitive, written once (docs/api.md, "One acquire shape").
// Copied into each class it drifted (argument orders, missing diagnostics, a reason that only
// some threw), so lock, semaphore, multi_lock, rw_lock's reader()/writer() and election's
// candidate() derive from this and supply one hook:
//
//   template <class Token> auto start(detail::acquire_request, diagnostics*, Token&&) const;
//
// that initiates void(error_code, Value) with any completion token. As Boost.MySQL's
// any_connection (two overloads per operation, each a forward to one run(params, diag, token)).
#include <boost/asio/deferred.hpp>
#include <chrono>
#include <optional>
#include <utility>

#include "mongolock/detail/acquire_mode.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

// What one call asks for: how to look (wait, one look, a confirming look) and the call's own
// bound (nullopt: the acquire timeout of the lock or provider; 0 with a try: no bound of its own).
struct acquire_request {
  acquire_mode mode = acquire_mode::wait;
  std::optional<std::chrono::milliseconds> timeout;
};

// The set of every primitive. Value: what a success delivers (lease, multi_lease, leadership).
// Per-class contracts (what "acquired" means, extra errors) are on each class; what is said here
// holds for all of them.
template <class Derived, class Value>
class acquire_surface {
 public:
  // Waits until acquired, within the acquire timeout (the lock's own lock_options, else the
  // provider's; 0 = never), then errc::timeout. Completion: void(error_code, Value). Other
  // errors: errc::invalid_name, errc::invalid_options, errc::server_unavailable,
  // errc::unsupported_server, errc::server_error, errc::not_authorized, errc::ambiguous_result
  // (given back), and operation_aborted after provider::async_shutdown.
  // Cancellation: terminal, partial and total, until the grant is decided; completes promptly with
  // operation_aborted. What the server granted while the call was in flight is released again.
  // Given use_awaitable or use_future, a failure throws system_error(ec, reason)
  // (with_reason.hpp); the other tokens deliver the code.
  template <class Token = boost::asio::deferred_t>
    requires is_token_v<Token>
  auto async_acquire(Token&& token = {}) const {
    return initiate({acquire_mode::wait, std::nullopt}, nullptr, std::forward<Token>(token));
  }
  // The same, with the reason for a failure in `d`.
  template <class Token = boost::asio::deferred_t>
  auto async_acquire(diagnostics& d, Token&& token = {}) const {
    return initiate({acquire_mode::wait, std::nullopt}, &d, std::forward<Token>(token));
  }
  // A timeout belongs to async_acquire_for: given here it is a compile error that says so.
  template <class Rep, class Period, class... Rest>
  auto async_acquire(std::chrono::duration<Rep, Period> d, Rest&&...) const {
    static_assert(misused_v<Rep>, "mongolock: async_acquire takes no timeout; use async_acquire_for(timeout)");
    // Never compiled past the assertion; it gives the call a type, so the assertion is the only error.
    return async_acquire_for(std::chrono::duration_cast<std::chrono::milliseconds>(d));
  }

  // As async_acquire, with this timeout for the whole call in place of the acquire timeout
  // (0 = one look: errc::busy if held). A negative timeout, or one above
  // limits::max_acquire_timeout, completes with errc::invalid_options before any server call.
  template <class Token = boost::asio::deferred_t>
    requires is_token_v<Token>
  auto async_acquire_for(std::chrono::milliseconds timeout, Token&& token = {}) const {
    return initiate({mode_for(timeout), timeout}, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_acquire_for(std::chrono::milliseconds timeout, diagnostics& d, Token&& token = {}) const {
    return initiate({mode_for(timeout), timeout}, &d, std::forward<Token>(token));
  }

  // One look, never queued (a line of waiters is ignored): errc::busy at once if held, however
  // long the holder has been silent. It is async_try_acquire(try_options{}): the call as a whole
  // has no bound of its own. A lock's try is bounded by the driver's timeouts (client_options; a
  // hung server: socket_timeout); a semaphore's, rw_lock's or multi-lock's look at each of its
  // locks is bounded by the acquire timeout as well, and its reads by the driver's.
  template <class Token = boost::asio::deferred_t>
    requires is_token_v<Token>
  auto async_try_acquire(Token&& token = {}) const {
    return async_try_acquire(try_options{}, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire(diagnostics& d, Token&& token = {}) const {
    return async_try_acquire(try_options{}, d, std::forward<Token>(token));
  }
  // A try with a bound and, opted in, the confirmation of a silent holder (try_options): `within`
  // bounds the whole call (0: no bound of its own), confirm_silent_holder lets each look watch a
  // long-silent holder. Errors: errc::busy if held (also when confirming did not finish within the
  // bound), errc::timeout if `within` ran out (the reason names what was not looked at, or the
  // call in flight), errc::invalid_options if `within` is negative or above
  // limits::max_acquire_timeout (366 days), and async_acquire's others.
  template <class Token = boost::asio::deferred_t>
    requires is_token_v<Token>
  auto async_try_acquire(try_options o, Token&& token = {}) const {
    return initiate({try_mode(o.confirm_silent_holder), o.within}, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire(try_options o, diagnostics& d, Token&& token = {}) const {
    return initiate({try_mode(o.confirm_silent_holder), o.within}, &d, std::forward<Token>(token));
  }
  // A bound belongs to try_options: given here it is a compile error that says so.
  template <class Rep, class Period, class... Rest>
  auto async_try_acquire(std::chrono::duration<Rep, Period> d, Rest&&...) const {
    static_assert(misused_v<Rep>,
                  "mongolock: async_try_acquire takes no duration; use async_try_acquire({.within = d}) or "
                  "async_acquire_for(d)");
    // Never compiled past the assertion; it gives the call a type, so the assertion is the only error.
    return async_acquire_for(std::chrono::duration_cast<std::chrono::milliseconds>(d));
  }

 protected:
  acquire_surface() = default;
  ~acquire_surface() = default;

  // Every overload ends here, the library's own acquires too (detail::access::acquire, in modes
  // the public set does not offer). A deferred operation may start after the object it came from
  // is gone, so Derived::start must pass everything it needs by value to detail::async_op
  // (initiation.hpp), which also gives use_awaitable and use_future the reason.
  template <class Token>
  auto initiate(acquire_request r, diagnostics* d, Token&& token) const {
    return static_cast<const Derived&>(*this).start(r, d, std::forward<Token>(token));
  }
};

}  // namespace mongolock::detail
