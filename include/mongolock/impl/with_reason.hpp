#pragma once
// with_reason's async_result: the handler that turns (error_code, T...) into
// (exception_ptr, T...), and the initiation that gives it the operation's diagnostics.
// Implementation: included at the end of mongolock/with_reason.hpp; include that instead.
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associator.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "mongolock/error.hpp"
#include "mongolock/with_reason.hpp"

namespace mongolock::detail {

// system_error(ec) when there is no reason: its what() would otherwise start with ": ".
inline boost::system::system_error failure_with_reason(const boost::system::error_code& ec, const diagnostics& d) {
  return d.reason.empty() ? boost::system::system_error(ec) : boost::system::system_error(ec, d.reason);
}

template <class Signature>
struct reason_signature;
template <class R, class... T>
struct reason_signature<R(boost::system::error_code, T...)> {
  using type = R(std::exception_ptr, T...);
};

// The caller's handler behind the adapter. `own` holds the adapter's diagnostics when the caller
// gave none; `d` points to the one the operation writes.
template <class Handler>
struct reason_handler {
  Handler handler;
  diagnostics* d;
  std::shared_ptr<diagnostics> own;

  template <class... T>
  void operator()(const boost::system::error_code& ec, T&&... values) {
    std::exception_ptr failure = ec ? std::make_exception_ptr(failure_with_reason(ec, *d)) : std::exception_ptr();
    own.reset();
    std::move(handler)(std::move(failure), std::forward<T>(values)...);
  }
};

// The diagnostics* among the operation's arguments (`found` for any other argument).
template <class A>
diagnostics* diagnostics_among(const A&, diagnostics* found) noexcept {
  return found;
}
inline diagnostics* diagnostics_among(diagnostics* given, diagnostics*) noexcept { return given; }

// The operation's own arguments, with its diagnostics* replaced by `d` (the same pointer when the
// caller gave one).
template <class A>
decltype(auto) with_diagnostics(A&& a, diagnostics*) noexcept {
  return std::forward<A>(a);
}
inline diagnostics* with_diagnostics(diagnostics*, diagnostics* d) noexcept { return d; }

template <class Initiation, class Handler, class... Args>
void initiate_with_reason(Initiation&& init, Handler&& handler, Args&&... args) {
  static_assert((std::is_same_v<std::decay_t<Args>, diagnostics*> + ... + 0) == 1,
                "mongolock::with_reason adapts mongolock operations only (those that take a diagnostics)");
  diagnostics* d = nullptr;
  ((d = diagnostics_among(args, d)), ...);  // null when the caller gave none
  std::shared_ptr<diagnostics> own;
  if (!d) {
    using alloc = typename std::allocator_traits<
        boost::asio::associated_allocator_t<std::decay_t<Handler>>>::template rebind_alloc<diagnostics>;
    own = std::allocate_shared<diagnostics>(alloc(boost::asio::get_associated_allocator(handler)));
    d = own.get();
  }
  reason_handler<std::decay_t<Handler>> adapted{std::forward<Handler>(handler), d, std::move(own)};
  std::forward<Initiation>(init)(std::move(adapted), with_diagnostics(std::forward<Args>(args), d)...);
}

// The operation's initiation behind the adapter, still naming the executor it reports
// (detail/initiation.hpp; token adapters such as asio::cancel_after ask for it).
template <class Initiation>
struct reason_initiation_base {
  Initiation init;
};
template <class Initiation>
  requires requires { typename Initiation::executor_type; }
struct reason_initiation_base<Initiation> {
  Initiation init;
  using executor_type = typename Initiation::executor_type;
  executor_type get_executor() const noexcept { return init.get_executor(); }
};

template <class Initiation>
struct reason_initiation : reason_initiation_base<Initiation> {
  template <class Handler, class... Args>
  void operator()(Handler&& handler, Args&&... args) && {
    initiate_with_reason(std::move(this->init), std::forward<Handler>(handler), std::forward<Args>(args)...);
  }
  template <class Handler, class... Args>
  void operator()(Handler&& handler, Args&&... args) const& {
    initiate_with_reason(this->init, std::forward<Handler>(handler), std::forward<Args>(args)...);
  }
};

}  // namespace mongolock::detail

// The adapted handler keeps the caller's handler's associations (executor, cancellation slot,
// allocator), as Asio's own adapters do.
template <template <class, class> class Associator, class Handler, class DefaultCandidate>
struct boost::asio::associator<Associator, mongolock::detail::reason_handler<Handler>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
  static typename Associator<Handler, DefaultCandidate>::type get(
      const mongolock::detail::reason_handler<Handler>& h) noexcept {
    return Associator<Handler, DefaultCandidate>::get(h.handler);
  }
  static auto get(const mongolock::detail::reason_handler<Handler>& h, const DefaultCandidate& c) noexcept
      -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c)) {
    return Associator<Handler, DefaultCandidate>::get(h.handler, c);
  }
};

template <class Token, class... Signatures>
struct boost::asio::async_result<mongolock::with_reason_t<Token>, Signatures...>
    : boost::asio::async_result<Token, typename mongolock::detail::reason_signature<Signatures>::type...> {
  // async_initiate takes the token as an lvalue and moves from it (as it does from the adapter).
  template <class Initiation, class RawToken, class... Args>
  static auto initiate(Initiation&& init, RawToken&& token, Args&&... args) {
    using inner = std::conditional_t<std::is_const_v<std::remove_reference_t<RawToken>>, const Token, Token>;
    return boost::asio::async_initiate<inner, typename mongolock::detail::reason_signature<Signatures>::type...>(
        mongolock::detail::reason_initiation<std::decay_t<Initiation>>{{std::forward<Initiation>(init)}},
        token.token(), std::forward<Args>(args)...);
  }
};
