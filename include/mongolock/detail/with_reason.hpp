#pragma once
// Failures that reach the caller as an exception carry the reason in words. Given use_awaitable
// or use_future, Asio itself would throw system_error(ec): the code, and nothing of the driver's
// or the server's message (diagnostics). For those two tokens an operation runs with a
// diagnostics of its own (or the caller's) and throws system_error(ec, reason): the same code,
// with what() = "reason: message [mongolock:N]".
//
// asio::deferred, the default, cannot do this on Boost 1.81: co_await of a deferred operation
// builds its exception inside Asio from the code alone, and a deferred operation completing with
// (exception_ptr, T) does not compile there (asio_compat.hpp). docs/api.md, "Completion tokens".
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <future>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "mongolock/error.hpp"

namespace mongolock::detail {

// The tokens whose failure is an exception that the library can build itself.
template <class Token>
inline constexpr bool throws_with_reason_v = false;
template <class Executor>
inline constexpr bool throws_with_reason_v<boost::asio::use_awaitable_t<Executor>> = true;
template <class Allocator>
inline constexpr bool throws_with_reason_v<boost::asio::use_future_t<Allocator>> = true;

// system_error(ec) when there is no reason: its what() would otherwise start with ": ".
inline boost::system::system_error failure_with_reason(const boost::system::error_code& ec,
                                                       const diagnostics& d) {
  return d.reason.empty() ? boost::system::system_error(ec) : boost::system::system_error(ec, d.reason);
}

// The awaitable of use_awaitable. `start(diagnostics*, token)` initiates the operation; it and
// the caller's diagnostics (`given`, may be null) are copied into the frame, which runs only
// when awaited.
template <class T, class Executor, class Start>
boost::asio::awaitable<T, Executor> awaited_with_reason(Start start, diagnostics* given) {
  diagnostics local;
  diagnostics& d = given ? *given : local;
  // Named locals, not temporaries inside co_await: GCC 12 may destroy those twice.
  auto op = start(&d, boost::asio::as_tuple(boost::asio::use_awaitable_t<Executor>{}));
  auto result = co_await std::move(op);
  if (const auto& ec = std::get<0>(result)) throw failure_with_reason(ec, d);
  if constexpr (!std::is_void_v<T>) co_return std::move(std::get<1>(result));
}

// The future of use_future, whose exception is built the same way.
template <class T, class Start>
std::future<T> future_with_reason(Start start, diagnostics* given) {
  auto promise = std::make_shared<std::promise<T>>();
  auto future = promise->get_future();
  auto local = given ? nullptr : std::make_shared<diagnostics>();
  diagnostics* d = given ? given : local.get();
  start(d, [promise, local, d](const boost::system::error_code& ec, auto&&... value) {
    if (ec) promise->set_exception(std::make_exception_ptr(failure_with_reason(ec, *d)));
    else promise->set_value(std::forward<decltype(value)>(value)...);
  });
  return future;
}

// `token` is use_awaitable or use_future (throws_with_reason_v); T is the operation's value
// (void for a void(error_code) operation).
template <class T, class Executor, class Start>
auto initiate_with_reason(const boost::asio::use_awaitable_t<Executor>&, diagnostics* given, Start start) {
  return awaited_with_reason<T, Executor>(std::move(start), given);
}
template <class T, class Allocator, class Start>
auto initiate_with_reason(const boost::asio::use_future_t<Allocator>&, diagnostics* given, Start start) {
  return future_with_reason<T>(std::move(start), given);
}

// An operation completing with (error_code[, T]): through initiate_with_reason for use_awaitable
// and use_future, else `start(d, token)` as it is. `start` takes (diagnostics*, token).
template <class T, class Token, class Start>
auto initiate_maybe_with_reason(Token&& token, diagnostics* d, Start start) {
  if constexpr (throws_with_reason_v<std::decay_t<Token>>)
    return initiate_with_reason<T>(token, d, std::move(start));
  else
    return start(d, std::forward<Token>(token));
}

}  // namespace mongolock::detail
