#pragma once
// The initiation object of every mongolock operation (detail::initiation(executor, start)): the
// function that starts it, plus the executor of the object it runs on. Asio's convention: token
// adapters such as asio::cancel_after (Boost 1.86 and later) look the executor up through
// get_executor().
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <chrono>
#include <type_traits>
#include <utility>

#include "mongolock/detail/asio_compat.hpp"  // awaitable_instead_v

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

}  // namespace mongolock::detail
