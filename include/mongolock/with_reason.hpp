#pragma once
// with_reason(token): a completion token adapter that puts a failure's reason into the exception.
//
// Every mongolock operation that completes with void(error_code, T...) takes a diagnostics
// (error.hpp) for the reason behind a failure. An exception built by Asio from the code alone
// (use_awaitable, use_future) loses it. Given with_reason(token), the operation completes with
// void(std::exception_ptr, T...) instead: null on success, else system_error(code, reason), whose
// what() is "reason: message [mongolock:N]" (plain system_error(code) when the reason is empty,
// e.g. a single lock's busy). The reason is read from the caller's diagnostics& when one was
// given, else from storage the adapter owns until the handler runs. As Boost.MySQL's
// with_diagnostics.
//
// use_awaitable and use_future get this by default on every mongolock operation that takes a
// diagnostics (detail/initiation.hpp, async_op); other tokens are left alone. Not with
// asio::deferred on Boost 1.81 (detail/asio_compat.hpp's list; docs/api.md, "Completion tokens").
// Only mongolock operations: any other is a compile error that says so.
#include <type_traits>
#include <utility>

namespace mongolock {

template <class Token>
class with_reason_t {
 public:
  template <class T>
    requires std::is_constructible_v<Token, T&&>
  constexpr explicit with_reason_t(T&& token) : token_(std::forward<T>(token)) {}

  // The token the adapted completion goes to.
  Token& token() & noexcept { return token_; }
  const Token& token() const& noexcept { return token_; }
  Token&& token() && noexcept { return std::move(token_); }

 private:
  Token token_;
};

template <class Token>
constexpr with_reason_t<std::decay_t<Token>> with_reason(Token&& token) {
  return with_reason_t<std::decay_t<Token>>(std::forward<Token>(token));
}

}  // namespace mongolock

#include "mongolock/impl/with_reason.hpp"
