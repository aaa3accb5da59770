#pragma once
// The coroutine bodies of lock's templates. Implementation: included at the end of
// mongolock/lock.hpp; include that instead.
#include "mongolock/lock.hpp"

namespace mongolock {

// lock::async_run's body: acquire, make the work from the lease and run it guarded by the lease,
// then release and wait for the release whatever happened. A cancellation cancels the acquire or
// the work, never the release.
// `given`: the caller's diagnostics or null; the acquire's failure is thrown with its reason.
template <class T, class Acquire, class F>
boost::asio::awaitable<T> lock::run_body(Acquire acquire, F make_work, diagnostics* given) {
  namespace asio = boost::asio;
  co_await asio::this_coro::throw_if_cancelled(false);  // the release below must still run
  diagnostics local;
  diagnostics& why = given ? *given : local;
  auto [ec, held] = co_await std::move(acquire)(why, asio::as_tuple(asio::use_awaitable));
  if (ec) throw detail::failure_with_reason(ec, why);
  std::exception_ptr failure;
  std::optional<std::conditional_t<std::is_void_v<T>, int, T>> result;
  try {
    // Named locals, not temporaries inside co_await: GCC 12 may destroy those twice.
    auto work = make_work(std::as_const(held));
    auto guarded = held.async_guard(std::move(work), asio::use_awaitable);
    if constexpr (std::is_void_v<T>) {
      co_await std::move(guarded);
      result.emplace(0);
    } else {
      result.emplace(co_await std::move(guarded));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  // The work finished (or failed) inside its lease; a release that fails afterwards does not
  // change that outcome (the lock then expires on its own, or is retried in the background).
  co_await held.async_release(asio::as_tuple(asio::use_awaitable));
  if (failure) std::rethrow_exception(failure);
  if constexpr (!std::is_void_v<T>) co_return std::move(*result);
}

}  // namespace mongolock
