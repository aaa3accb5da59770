#pragma once
// A named lock: cheap to create, holds no server state until acquired.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <concepts>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "mongolock/detail/acquire_mode.hpp"
#include "mongolock/detail/acquire_surface.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/detail/asio_compat.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/options.hpp"

namespace mongolock {
namespace detail {
struct provider_impl;
struct access;
}  // namespace detail

// Thread safety: a lock object is a name plus its provider and may be copied freely; distinct
// objects may be used from any thread. Handlers run on the executor associated with the
// completion handler, defaulting to the provider's executor (the client's).

// Acquire (the set of detail/acquire_surface.hpp): async_acquire, async_acquire_for,
// async_try_acquire, completing with void(error_code, lease). A wait retries with jittered
// backoff. A failure ends it (no retry), except three that lead on: a take with no reply by
// expiry - safety margin after it was sent, and a failed give-back, lead to a new read; a take
// whose outcome is unknown is re-checked with a majority read (src/sansio/acquire_fsm.cpp,
// on_take and on_given_back). A try's errc::timeout is also a grant that came too late to use
// (given back); its bound is checked as src/engine/timeout_check.hpp does.
class lock : public detail::acquire_surface<lock, lease> {
 public:
  // Made by provider::create_lock.
  const std::string& name() const noexcept { return name_; }

  // Scoped use, as `await using` elsewhere: acquires (waiting as async_acquire does), runs `work`
  // under async_guard on the handler's executor, then always releases and waits for the release
  // before completing with the work's result. Completion: void(exception_ptr[, T]), as co_spawn;
  // the exception is system_error(errc::timeout, errc::lease_lost, ...) or the work's own. A
  // release that fails after the work finished does not change the result (the lock expires).
  // Cancellation: terminal; cancels the acquire or the work; the release still runs.
  // With asio::deferred: the awaitable, as lease::async_guard does (a Boost 1.81 limit, detail/asio_compat.hpp).
  template <class T, class Token = boost::asio::use_awaitable_t<>>
    requires detail::is_token_v<Token>
  auto async_run(boost::asio::awaitable<T> work, Token&& token = {}) {
    if constexpr (detail::awaitable_instead_v<Token>)
      return async_run(std::move(work), boost::asio::use_awaitable);
    else
      return initiate_run(given(std::move(work)), nullptr, std::forward<Token>(token));
  }
  // The same, with the reason for an acquire failure in `d`.
  template <class T, class Token = boost::asio::use_awaitable_t<>>
  auto async_run(boost::asio::awaitable<T> work, diagnostics& d, Token&& token = {}) {
    if constexpr (detail::awaitable_instead_v<Token>)
      return async_run(std::move(work), d, boost::asio::use_awaitable);
    else
      return initiate_run(given(std::move(work)), &d, std::forward<Token>(token));
  }
  // The same, with work made from the lease once it is held: `make_work(lease)` returns the
  // awaitable to run guarded, so it can pass the fencing token on. The lease outlives the work.
  template <class F, class Token = boost::asio::use_awaitable_t<>>
    requires detail::is_token_v<Token> && std::invocable<F&, const lease&> &&
             detail::is_awaitable_v<std::invoke_result_t<F&, const lease&>>
  auto async_run(F make_work, Token&& token = {}) {
    if constexpr (detail::awaitable_instead_v<Token>)
      return async_run(std::move(make_work), boost::asio::use_awaitable);
    else
      return initiate_run(std::move(make_work), nullptr, std::forward<Token>(token));
  }
  template <class F, class Token = boost::asio::use_awaitable_t<>>
    requires std::invocable<F&, const lease&> && detail::is_awaitable_v<std::invoke_result_t<F&, const lease&>>
  auto async_run(F make_work, diagnostics& d, Token&& token = {}) {
    if constexpr (detail::awaitable_instead_v<Token>)
      return async_run(std::move(make_work), d, boost::asio::use_awaitable);
    else
      return initiate_run(std::move(make_work), &d, std::forward<Token>(token));
  }

 private:
  friend class provider;
  friend struct detail::access;
  using impl_ptr = std::shared_ptr<detail::provider_impl>;
  using acquire_handler = boost::asio::any_completion_handler<void(boost::system::error_code, lease)>;
  // `plain`: a lock the user named (provider::create_lock, a multi-lock's member, an election): its
  // name may not be a permit's (NAME#k), and its take never matches a semaphore's or rw_lock's
  // declaration, which lives in the same document (docs/design.md section 10). Permits are not.
  lock(impl_ptr p, std::string name, std::shared_ptr<const lock_options> timing = nullptr, bool plain = false)
      : provider_(std::move(p)), name_(std::move(name)), timing_(std::move(timing)), plain_(plain) {}

  // `timing`: the lock's own options (provider::create_lock(name, options)); null: the provider's.
  // `d`: the caller's diagnostics or null.
  static void start_acquire(impl_ptr, std::string name, std::shared_ptr<const lock_options> timing, bool plain,
                            detail::acquire_mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                            acquire_handler);
  static boost::asio::any_io_executor executor_of(const detail::provider_impl&) noexcept;

  // The work of async_run as made from the lease: an awaitable given up front ignores it.
  template <class T>
  static auto given(boost::asio::awaitable<T> work) {
    return [w = std::move(work)](const lease&) mutable { return std::move(w); };
  }
  template <class F>
  using work_result_t = typename std::invoke_result_t<F&, const lease&>::value_type;

  // lock::async_run's coroutine (defined in impl/lock.hpp). `given`: the caller's diagnostics or null.
  template <class T, class Acquire, class F>
  static boost::asio::awaitable<T> run_body(Acquire acquire, F make_work, diagnostics* given);

  template <class F, class Token, class T = work_result_t<F>>
  auto initiate_run(F make_work, diagnostics* d, Token&& token) {
    return boost::asio::async_initiate<Token, detail::guard_signature<T>>(
        detail::initiation(executor_of(*provider_),
                           [](auto handler, lock l, F w, diagnostics* diag) {
                             auto ex = boost::asio::get_associated_executor(handler, executor_of(*l.provider_));
                             auto acquire = [l](diagnostics& why, auto tok) mutable {
                               return l.async_acquire(why, std::move(tok));
                             };
                             detail::co_spawn_relayed(ex, run_body<T>(std::move(acquire), std::move(w), diag),
                                                      std::move(handler));
                           }),
        token, *this, std::move(make_work), d);
  }

  // The one hook of the acquire set.
  friend class detail::acquire_surface<lock, lease>;
  template <class Token>
  auto start(detail::acquire_request r, diagnostics* d, Token&& token) const {
    return detail::async_op<void(boost::system::error_code, lease)>(
        detail::initiation(executor_of(*provider_),
                           [](auto h, impl_ptr p, std::string n, std::shared_ptr<const lock_options> o, bool plain,
                              detail::acquire_mode m, std::optional<std::chrono::milliseconds> t, diagnostics* diag) {
                             start_acquire(std::move(p), std::move(n), std::move(o), plain, m, t, diag, std::move(h));
                           }),
        token, provider_, name_, timing_, plain_, r.mode, r.timeout, d);
  }

  impl_ptr provider_;
  std::string name_;
  std::shared_ptr<const lock_options> timing_;  // null: the provider's lock_options
  bool plain_ = false;
};

}  // namespace mongolock

#include "mongolock/impl/lock.hpp"
