#pragma once
// The initiation object of every mongolock operation (detail::initiation(executor, start)): the
// function that starts it, plus the executor of the object it runs on. Asio's convention: token
// adapters such as asio::cancel_after (Boost 1.86 and later) look the executor up through
// get_executor(). And the one door every operation completing with (error_code, T...) goes
// through (async_op), which gives use_awaitable and use_future the reason (with_reason.hpp).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <type_traits>
#include <utility>

#include "mongolock/detail/asio_compat.hpp"  // awaitable_instead_v
#include "mongolock/with_reason.hpp"

namespace mongolock {
struct diagnostics;
struct try_options;
enum class force_mode;
}  // namespace mongolock

namespace mongolock::detail {

template <class T>
inline constexpr bool is_duration_v = false;
template <class Rep, class Period>
inline constexpr bool is_duration_v<std::chrono::duration<Rep, Period>> = true;
// For a static_assert that fires only when the template that holds it is used.
template <class T>
inline constexpr bool misused_v = false;

// Operations take optional arguments before the completion token (diagnostics, try_options,
// force_mode); this keeps the overload without them from taking one for its token. A duration is
// never a token either: an operation given one where it takes none says which one takes it
// (async_acquire(5s): use async_acquire_for).
template <class Token>
inline constexpr bool is_token_v = !std::is_same_v<std::decay_t<Token>, diagnostics> &&
                                   !std::is_same_v<std::decay_t<Token>, try_options> &&
                                   !std::is_same_v<std::decay_t<Token>, force_mode> &&
                                   !is_duration_v<std::decay_t<Token>>;

template <class T>
inline constexpr bool is_awaitable_v = false;
template <class T, class Executor>
inline constexpr bool is_awaitable_v<boost::asio::awaitable<T, Executor>> = true;

template <class Start>
class initiation {
 public:
  using executor_type = boost::asio::any_io_executor;

  initiation(executor_type ex, Start start) : ex_(std::move(ex)), start_(std::move(start)) {}
  executor_type get_executor() const noexcept { return ex_; }

  template <class Handler, class... Args>
  void operator()(Handler&& handler, Args&&... args) const {
    start_(std::forward<Handler>(handler), std::forward<Args>(args)...);
  }

 private:
  executor_type ex_;
  Start start_;
};

// The tokens whose failure is an exception built by Asio from the code alone, and which therefore
// get with_reason by default. asio::deferred cannot (asio_compat.hpp's list).
template <class Token>
inline constexpr bool reason_by_default_v = false;
template <class Executor>
inline constexpr bool reason_by_default_v<boost::asio::use_awaitable_t<Executor>> = true;
template <class Allocator>
inline constexpr bool reason_by_default_v<boost::asio::use_future_t<Allocator>> = true;

// Every operation that completes with `Signature` = void(error_code, T...) starts here:
// async_initiate, through with_reason for use_awaitable and use_future when the operation passes a
// diagnostics* among `args` (one that has no reason to give, such as async_wait_lost, passes none
// and throws Asio's system_error(code)). As async_initiate: `init` gets (handler, args...).
template <class Signature, class Token, class Initiation, class... Args>
auto async_op(Initiation&& init, Token&& token, Args&&... args) {
  constexpr bool has_reason = (std::is_same_v<std::decay_t<Args>, diagnostics*> || ...);
  if constexpr (has_reason && reason_by_default_v<std::decay_t<Token>>) {
    auto adapted = with_reason(std::forward<Token>(token));
    return boost::asio::async_initiate<decltype(adapted), Signature>(std::forward<Initiation>(init), adapted,
                                                                     std::forward<Args>(args)...);
  } else {
    return boost::asio::async_initiate<Token, Signature>(std::forward<Initiation>(init), token,
                                                         std::forward<Args>(args)...);
  }
}

}  // namespace mongolock::detail
