#pragma once
// What every held thing shares, written once: lease, multi_lease and leadership (a lease plus the
// value it proclaimed) each derive from this, as the acquirers derive from acquire_surface.hpp.
// Copied into each class, the guard, the wait for loss and the release drifted apart (which
// executor, what an empty object says). Two parameters:
//   Derived: the class itself; when it is not Held, it gives `const Held& held_object() const`.
//   Held: lease or multi_lease, whose private statics (befriending this template) are the hooks:
//     using handle = ...;  shared with operations in flight, so that moving or destroying the
//                          object meanwhile is safe
//     static const handle& handle_of(const Held&);
//     static bool holds(const handle&);           false: an empty object
//     static const char* const nothing_held;      the reason an empty object gives
//     static boost::asio::any_io_executor executor_of(const handle&);  system executor if empty
//     static boost::asio::strand<boost::asio::any_io_executor> guard_strand(const handle&);
//     static boost::system::error_code ended(const handle&);  {} while every lease is held and
//                          before its local deadline; thread-safe (handle not empty)
//     static void start_release(handle, diagnostics*, handler_ec);
//     static void start_wait_lost(handle, handler_ec);
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <type_traits>
#include <utility>

#include "mongolock/detail/asio_compat.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/error.hpp"
#include "mongolock/impl/guarded.hpp"

namespace mongolock::detail {

template <class Derived, class Held>
class lease_surface {
 public:
  // True while held: not empty, and status() is {}. Thread-safe.
  bool held() const noexcept { return Held::holds(handle()) && !held_object().status(); }

  // Releases. Completion: void(error_code): {} when this call freed it (every lock of it),
  // errc::lease_lost if it had been lost, errc::not_held if already released or empty, else a
  // server error (errc::server_unavailable, errc::server_error, errc::ambiguous_result: the lease
  // then expires on its own, or the release is retried in the background). Guarded work is
  // cancelled before the lock is freed. Cancellation: not supported (the release always runs).
  // Each class's comment says what its reason names.
  template <class Token = boost::asio::deferred_t>
    requires is_token_v<Token>
  auto async_release(Token&& token = {}) {
    return initiate_on_held(&Held::start_release, nullptr, std::forward<Token>(token));
  }
  // The same, with the reason for a failure in `d` (error.hpp).
  template <class Token = boost::asio::deferred_t>
  auto async_release(diagnostics& d, Token&& token = {}) {
    return initiate_on_held(&Held::start_release, &d, std::forward<Token>(token));
  }

  // Completion: void(error_code) when it ends (for several leases: the first that ends):
  // errc::lease_lost (lost) or errc::released (released by us); errc::not_held at once when
  // empty. No server call. Cancellation: terminal, partial and total; completes with
  // operation_aborted, no side effect.
  template <class Token = boost::asio::deferred_t>
  auto async_wait_lost(Token&& token = {}) {
    return async_op<void(boost::system::error_code)>(
        initiation(Held::executor_of(handle()),
                   [](auto h, auto s) {
                     if (!Held::holds(s)) return complete_not_held(std::move(h));
                     Held::start_wait_lost(std::move(s), std::move(h));
                   }),
        token, handle());
  }

  // Runs `work` on the executor associated with the completion handler (for co_await: the
  // calling coroutine's executor, e.g. the strand of a Beast session), falling back to the
  // lease's strand (the first lease's for several); if it is lost first (any of them), `work` is
  // cancelled (terminal) before any other owner can take that lock, and the operation fails with
  // system_error(errc::lease_lost). Work that completes after the lease's local deadline (by this
  // process's boot clock, which counts time suspended or stopped), even before the lease is known
  // lost, fails the same way (errc::released after a release): its result is dropped, so work
  // that must keep what it produced stores it itself before returning (docs/api.md). Completion
  // signature is co_spawn's: void(exception_ptr[, T]).
  // Cancelling the guard cancels the work. Throws system_error(errc::not_held) at once when
  // empty. No server call. The default token is use_awaitable; with asio::deferred this returns
  // the awaitable (an Asio 1.81 limit, detail/asio_compat.hpp), so
  // `co_await held.async_guard(work(), asio::deferred)` works.
  template <class T, class Token = boost::asio::use_awaitable_t<>>
  auto async_guard(boost::asio::awaitable<T> work, Token&& token = {}) {
    if constexpr (awaitable_instead_v<Token>) {
      return async_guard(std::move(work), boost::asio::use_awaitable);
    } else {
      if (!Held::holds(handle())) throw boost::system::system_error(make_error_code(errc::not_held));
      return boost::asio::async_initiate<Token, guard_signature<T>>(
          initiation(Held::executor_of(handle()),
                     [](auto handler, auto s, boost::asio::awaitable<T> w) {
                       auto strand = Held::guard_strand(s);
                       boost::asio::any_io_executor work_ex = boost::asio::get_associated_executor(handler, strand);
                       co_spawn_relayed(strand, guard_body<T>(std::move(s), std::move(w), std::move(work_ex)),
                                        std::move(handler));
                     }),
          token, handle(), std::move(work));
    }
  }

 protected:
  lease_surface() = default;
  ~lease_surface() = default;
  using handler_ec = boost::asio::any_completion_handler<void(boost::system::error_code)>;

  // An operation that completes with void(error_code): `start(handle, args..., d, handler)`, or
  // errc::not_held (with its reason) when empty. The handle is taken now, by value: a deferred
  // operation may start after this object was moved from or reassigned.
  template <class Token, class Start, class... Args>
  auto initiate_on_held(Start start, diagnostics* d, Token&& token, Args... args) {
    return async_op<void(boost::system::error_code)>(
        initiation(Held::executor_of(handle()),
                   [start](auto h, auto s, diagnostics* diag, Args... a) {
                     if (!Held::holds(s)) {
                       if (diag) diag->reason = Held::nothing_held;
                       return complete_not_held(std::move(h));
                     }
                     start(std::move(s), std::move(a)..., diag, std::move(h));
                   }),
        token, handle(), d, std::move(args)...);
  }

 private:
  const Held& held_object() const noexcept {
    if constexpr (std::is_same_v<Derived, Held>) return static_cast<const Held&>(*this);
    else return static_cast<const Derived&>(*this).held_object();
  }
  // A reference: held() stays free of a shared_ptr copy; an operation copies it into its arguments.
  const auto& handle() const noexcept { return Held::handle_of(held_object()); }

  // An empty object has no executor of its own: complete through the handler's (posted, never
  // inline), while its concrete type is still known.
  template <class Handler>
  static void complete_not_held(Handler&& h) {
    boost::asio::post(boost::asio::append(std::forward<Handler>(h), make_error_code(errc::not_held)));
  }

  // The guard's coroutine, on the guard strand: `work` (spawned on `work_ex`, the caller's
  // executor) next to the wait for the end; an end first (or one before it started, or before
  // the work completed: checked_work) rethrows as system_error(errc::lease_lost / errc::released).
  template <class T, class Handle>
  static boost::asio::awaitable<T> guard_body(Handle s, boost::asio::awaitable<T> work,
                                              boost::asio::any_io_executor work_ex) {
    if (auto ec = Held::ended(s)) throw boost::system::system_error(ec);
    auto body = guarded<T>(checked_work<T>(s, std::move(work)), std::move(work_ex), wait_lost_deferred(s));
    if constexpr (std::is_void_v<T>) co_await std::move(body);
    else co_return co_await std::move(body);
  }

  // `work`, then the end as it stands when the work completes, on the work's executor (ended()
  // reads the boot clock and atomics): a holder resumed from a suspend or SIGSTOP past its
  // deadline may run the work's own timer before the watchdog, and work that completed then was
  // not done under the lease (docs/design.md section 6).
  template <class T, class Handle>
  static boost::asio::awaitable<T> checked_work(Handle s, boost::asio::awaitable<T> work) {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(work);
      if (auto ec = Held::ended(s)) throw boost::system::system_error(ec);
    } else {
      T result = co_await std::move(work);
      if (auto ec = Held::ended(s)) throw boost::system::system_error(ec);
      co_return result;
    }
  }

 protected:
  // async_wait_lost of a handle known not to be empty, as a deferred operation (for the library's
  // own waits: the guard, a hold).
  template <class Handle>
  static auto wait_lost_deferred(Handle s) {
    return boost::asio::async_initiate<const boost::asio::deferred_t&, void(boost::system::error_code)>(
        [](auto h, Handle st) { Held::start_wait_lost(std::move(st), std::move(h)); }, boost::asio::deferred,
        std::move(s));
  }
};

}  // namespace mongolock::detail
