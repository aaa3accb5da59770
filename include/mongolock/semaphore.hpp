#pragma once
// A counting semaphore (provider::create_semaphore): at most N holders of one name at a time.
// Each permit is a lock of its own, named "NAME#1" .. "NAME#N", with its own lease and fencing
// token, so what a lock guarantees holds for every permit: renewal on a strand, guarded work
// cancelled when the lease is lost (before anyone else can take that permit), a crashed holder's
// permit taken over after its observed expiry, tokens that only increase on that permit.
//
// N is declared under NAME by the first user and never changes: a program that asks for another
// N (or for a rw_lock of that name) fails with errc::declaration_mismatch instead of admitting
// its own number of holders.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "mongolock/error.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/detail/with_reason.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/limits.hpp"
#include "mongolock/lock.hpp"

namespace mongolock {

namespace detail {
struct semaphore_state;
}  // namespace detail

// Made by provider::create_semaphore. Cheap to copy (copies share the declaration check); no
// server state until acquired. Thread safety: as lock. Handlers default to the provider's executor.
class semaphore {
 public:
  const std::string& name() const noexcept;
  int permits() const noexcept;

  // Waits for a permit. First one look at each permit, starting at a random one, taking the first
  // that is free and has nobody in its line (a newcomer never overtakes waiters); then a wait on every permit at once (each as
  // lock::async_acquire: backoff, the permit's line, observed expiry), keeping the first granted
  // and releasing any other granted meanwhile. Completion: void(error_code, lease); the lease's
  // name() is the permit's ("NAME#k"). Errors: lock::async_acquire's (timeout after the acquire
  // timeout), errc::invalid_name (a name whose permit names are not valid lock names),
  // errc::invalid_options (permits outside 1..limits::max_permits), errc::declaration_mismatch.
  // Cancellation: terminal, partial and total, as lock::async_acquire.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_acquire(Token&& token = {}) {
    return initiate(detail::acquire_mode::wait, std::nullopt, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_acquire(diagnostics& d, Token&& token = {}) {
    return initiate(detail::acquire_mode::wait, std::nullopt, &d, std::forward<Token>(token));
  }
  // A timeout belongs to async_acquire_for: given here it is a compile error that says so.
  template <class Rep, class Period, class... Rest>
  auto async_acquire(std::chrono::duration<Rep, Period> d, Rest&&...) {
    static_assert(detail::misused_v<Rep>, "mongolock: semaphore::async_acquire takes no timeout; use async_acquire_for(timeout)");
    // Never compiled past the assertion; it gives the call a type, so the assertion is the only error.
    return async_acquire_for(std::chrono::duration_cast<std::chrono::milliseconds>(d));
  }
  // With this timeout for the whole call; 0 = a try (errc::busy if no permit is free).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_acquire_for(std::chrono::milliseconds timeout, Token&& token = {}) {
    return initiate(detail::mode_for(timeout), timeout, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_acquire_for(std::chrono::milliseconds timeout, diagnostics& d, Token&& token = {}) {
    return initiate(detail::mode_for(timeout), timeout, &d, std::forward<Token>(token));
  }
  // One try of each permit: errc::busy if every permit is held. Like lock::async_try_acquire it
  // does not queue, so it ignores the permits' lines: a waiter that crashed while in line cannot
  // make it busy (only a waiting acquire removes such an entry, after one observation window).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_try_acquire(Token&& token = {}) {
    return initiate(detail::acquire_mode::try_once, std::nullopt, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire(diagnostics& d, Token&& token = {}) {
    return initiate(detail::acquire_mode::try_once, std::nullopt, &d, std::forward<Token>(token));
  }
  // A try with lock::async_try_acquire's options, applied to the whole call and to each permit:
  // `within` bounds the call (0: no bound of its own), and confirm_silent_holder lets each permit's
  // look watch a long-silent holder as lock's try does. Completion: void(error_code, lease).
  // Errors: errc::busy when every permit looked at was held (also a confirmation cut short by
  // `within`), errc::timeout when `within` ran out before every permit was looked at (the reason
  // names the first one not looked at), errc::invalid_options for a negative `within`, and
  // async_acquire's other errors. Cancellation: terminal, partial and total (operation_aborted).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_try_acquire(try_options o, Token&& token = {}) {
    return initiate(detail::try_mode(o.confirm_silent_holder), o.within, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire(try_options o, diagnostics& d, Token&& token = {}) {
    return initiate(detail::try_mode(o.confirm_silent_holder), o.within, &d, std::forward<Token>(token));
  }

 private:
  friend class provider;
  friend class rw_lock;
  using shared = std::shared_ptr<detail::semaphore_state>;
  using handler = boost::asio::any_completion_handler<void(boost::system::error_code, lease)>;
  // `kind`: what the declaration records ("semaphore", or "rw_lock" for a rw_lock's read permits).
  semaphore(const lock& prototype, std::string name, int permits, const char* kind = "semaphore");

  static boost::asio::any_io_executor executor_of(const shared&) noexcept;
  static void start(shared, detail::acquire_mode, std::optional<std::chrono::milliseconds>, diagnostics*, handler);

  // use_awaitable and use_future throw with the reason in what() (detail/with_reason.hpp).
  template <class Token>
  auto initiate(detail::acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                Token&& token) const {
    return detail::initiate_maybe_with_reason<lease>(std::forward<Token>(token), d, [self = *this, m, timeout](diagnostics* dd, auto&& tok) {
      return self.initiate_plain(m, timeout, dd, std::forward<decltype(tok)>(tok));
    });
  }
  template <class Token>
  auto initiate_plain(detail::acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                      Token&& token) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, lease)>(
        detail::initiation(executor_of(state_),
                           [](auto h, shared s, detail::acquire_mode mode,
                              std::optional<std::chrono::milliseconds> t, diagnostics* diag) {
                             start(std::move(s), mode, t, diag, std::move(h));
                           }),
        token, state_, m, timeout, d);
  }

  shared state_;
};

}  // namespace mongolock
