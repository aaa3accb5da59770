#pragma once
// A held lock. Renews itself on a strand while it lives; when it is lost, everything guarded by
// it is cancelled and async_wait_lost() completes, before any other owner can acquire the lock.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "mongolock/error.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/detail/asio_compat.hpp"
#include "mongolock/detail/fenced_surface.hpp"
#include "mongolock/impl/guarded.hpp"

namespace mongolock {
namespace detail {
struct lease_state;
struct access;
}  // namespace detail

// Thread safety: a lease object is not (like any Asio I/O object); status(), held() and the
// accessors may be called from any thread while the lease renews itself. Handlers run on the
// executor associated with the completion handler (Asio's rule), defaulting to the lease's strand.
class lease : public detail::fenced_surface<lease> {
 public:
  lease() noexcept = default;
  lease(lease&&) noexcept = default;
  // Releases the lease held before (in the background, as the destructor does).
  lease& operator=(lease&& other) noexcept;
  // Not released yet: released in the background (best effort). Never blocks, never throws.
  ~lease();

  // True when this object refers to an acquisition (held, lost or released).
  explicit operator bool() const noexcept { return state_ != nullptr; }
  // {} while held; errc::lease_lost, errc::released or errc::not_held otherwise. Thread-safe.
  boost::system::error_code status() const noexcept;
  bool held() const noexcept { return state_ && !status(); }
  // The accessors below are defined on an empty lease too (as as_tuple hands out with errc::busy):
  // empty strings and token 0, which no acquisition ever carries.
  const std::string& name() const noexcept;
  // 32 hex characters from the OS's cryptographic random source; new for every acquisition.
  const std::string& owner_id() const noexcept;
  // Strictly increasing per lock name across release, expiry, takeover and clean-up; 0 when empty.
  std::int64_t fencing_token() const noexcept;
  // By this process's clock, how long the lease stays held if no renewal succeeds from now on: its
  // local deadline (the send time of the last successful take or renewal + expiry - margin,
  // docs/design.md section 2) minus now; 0 once it has ended, and on an empty lease. Counts
  // suspended time. Thread-safe. For a process that must stop work the holder cannot stop itself
  // (the CLI hands it to its supervisor after every renewal).
  std::chrono::milliseconds time_left() const noexcept;
  // By this process's clock, how long ago the take that acquired the lease was sent (counting
  // suspended time); 0 on an empty lease. Thread-safe.
  std::chrono::milliseconds held_for() const noexcept;
  // The strand that renews this lease. Throws system_error(errc::not_held) on an empty lease.
  boost::asio::strand<boost::asio::any_io_executor> get_executor() const;

  // Releases the lock. Completion: void(error_code): {} when this call freed it, errc::lease_lost
  // if it had been lost, errc::not_held if already released (or an empty lease), else a server
  // error (errc::server_unavailable, errc::server_error, errc::ambiguous_result: the lease then
  // expires on its own, or the release is retried in the background). Guarded work is cancelled
  // before the lock is freed. Cancellation: not supported (the release always runs).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_release(Token&& token = {}) {
    return initiate_release(nullptr, std::forward<Token>(token));
  }
  // The same, with the reason for a failure in `d` (error.hpp).
  template <class Token = boost::asio::deferred_t>
  auto async_release(diagnostics& d, Token&& token = {}) {
    return initiate_release(&d, std::forward<Token>(token));
  }

  // Releases the lock once `hold_at_least` has passed since it was acquired (held_for), keeping
  // the lease held and renewed until then: a job that ended early still keeps the others out for
  // the whole period (a job scheduled on several hosts whose clocks differ; docs/design.md
  // section 13). Completion as async_release; if the lease is lost during the hold,
  // errc::lease_lost. Cancellation: terminal, partial and total, during the hold only: completes
  // with operation_aborted and the lease stays held (release it, or call this again).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_release_after(std::chrono::milliseconds hold_at_least, Token&& token = {}) {
    return initiate_release_after(hold_at_least, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_release_after(std::chrono::milliseconds hold_at_least, diagnostics& d, Token&& token = {}) {
    return initiate_release_after(hold_at_least, &d, std::forward<Token>(token));
  }

  // Records in the lock's document that the work of this lease completed: its fencing token, as
  // lock_info::last_completed_token, kept by every later take and release until the next record.
  // Written only while the document still names this lease. A job that must run once per period
  // (the CLI's --once-per, docs/design.md section 13) records its completion before releasing.
  // Completion: void(error_code): {} when recorded; errc::lease_lost if the lease was lost, or
  // the document no longer names it; errc::not_held after a release; a server error otherwise
  // (errc::ambiguous_result: it may have been recorded). Cancellation: not supported (one write).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_record_completion(Token&& token = {}) {
    return initiate_record(nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_record_completion(diagnostics& d, Token&& token = {}) {
    return initiate_record(&d, std::forward<Token>(token));
  }

  // Completion: void(error_code) when the lease ends: errc::lease_lost (lost) or errc::released
  // (released by us); errc::not_held at once for an empty lease. No server call.
  // Cancellation: terminal, partial and total; completes with operation_aborted, no side effect.
  template <class Token = boost::asio::deferred_t>
  auto async_wait_lost(Token&& token = {}) {
    return wait_lost(state_, std::forward<Token>(token));
  }

  // Runs `work` on the executor associated with the completion handler (for co_await: the
  // calling coroutine's executor, e.g. the strand of a Beast session), falling back to the
  // lease's strand; if the lease is lost first, `work` is cancelled (terminal) and the operation
  // fails with system_error(errc::lease_lost). Completion signature is co_spawn's:
  // void(exception_ptr[, T]). Cancelling the guard cancels the work. Throws
  // system_error(errc::not_held) at once on an empty lease. No server call.
  // The default token is use_awaitable; with asio::deferred this returns the awaitable (an Asio
  // 1.81 limit, detail/asio_compat.hpp), so `co_await lease.async_guard(work(), asio::deferred)` works.
  template <class T, class Token = boost::asio::use_awaitable_t<>>
  auto async_guard(boost::asio::awaitable<T> work, Token&& token = {}) {
    if constexpr (detail::awaitable_instead_v<Token>)
      return async_guard(std::move(work), boost::asio::use_awaitable);
    else
      return initiate_guard(std::move(work), std::forward<Token>(token));
  }

 private:
  friend struct detail::access;  // the library makes leases; users get them from an acquire

  // ---- Fenced writes (fence.hpp): async_fenced_update / async_fenced_write come from the base;
  // this is its one hook: the lease's strand, its provider's client and its fencing token. ----
  friend class detail::fenced_surface<lease>;
  friend class multi_lease;  // a set's writes go through its first lease's client
  detail::fence_context fence_context() const;
  // ---- end of fenced writes ----

  using state_ptr = std::shared_ptr<detail::lease_state>;
  using handler_ec = boost::asio::any_completion_handler<void(boost::system::error_code)>;
  explicit lease(state_ptr s) noexcept : state_(std::move(s)) {}

  static void abandon(state_ptr) noexcept;
  static void start_release(state_ptr, diagnostics*, handler_ec);
  static void start_release_after(state_ptr, std::chrono::milliseconds, diagnostics*, handler_ec);
  static void start_record(state_ptr, diagnostics*, handler_ec);
  static void start_wait_lost(state_ptr, handler_ec);
  static boost::system::error_code status_of(const detail::lease_state&) noexcept;
  static boost::asio::strand<boost::asio::any_io_executor> strand_of(const detail::lease_state&);
  // The lease's strand; the system executor for an empty lease (its operations only post not_held).
  static boost::asio::any_io_executor executor_of(const state_ptr& st) {
    if (!st) return boost::asio::system_executor();
    return strand_of(*st);
  }
  // An empty lease has no executor of its own: complete through the handler's (posted, never
  // inline), while its concrete type is still known.
  template <class Handler>
  static void complete_not_held(Handler&& h) {
    boost::asio::post(boost::asio::append(std::forward<Handler>(h), make_error_code(errc::not_held)));
  }

  // The initiation of an operation of this lease that completes with void(error_code): `start`
  // (a static member) with the state, `args` and the diagnostics; an empty lease completes with
  // errc::not_held and says so.
  template <class Token, class Start, class... Args>
  auto initiate_on_lease(Start start, diagnostics* d, Token&& token, Args... args) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        detail::initiation(executor_of(state_),
                           [start](auto h, state_ptr s, diagnostics* diag, Args... a) {
                             if (!s) {
                               if (diag) diag->reason = "this lease object holds no acquisition";
                               return complete_not_held(std::move(h));
                             }
                             start(std::move(s), std::move(a)..., diag, std::move(h));
                           }),
        token, state_, d, std::move(args)...);
  }
  template <class Token>
  auto initiate_release(diagnostics* d, Token&& token) {
    return initiate_on_lease(&lease::start_release, d, std::forward<Token>(token));
  }
  template <class Token>
  auto initiate_release_after(std::chrono::milliseconds hold, diagnostics* d, Token&& token) {
    return initiate_on_lease(&lease::start_release_after, d, std::forward<Token>(token), hold);
  }
  template <class Token>
  auto initiate_record(diagnostics* d, Token&& token) {
    return initiate_on_lease(&lease::start_record, d, std::forward<Token>(token));
  }

  template <class Token>
  static auto wait_lost(state_ptr st, Token&& token) {
    auto ex = executor_of(st);
    return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
        detail::initiation(std::move(ex),
                           [](auto h, state_ptr s) {
                             if (!s) return complete_not_held(std::move(h));
                             start_wait_lost(std::move(s), std::move(h));
                           }),
        token, std::move(st));
  }

  // The guard's coroutine, on the lease's strand (defined in impl/lease.hpp).
  template <class T>
  static boost::asio::awaitable<T> guard_body(state_ptr st, boost::asio::awaitable<T> work,
                                              boost::asio::any_io_executor work_ex);

  template <class T, class Token>
  auto initiate_guard(boost::asio::awaitable<T> work, Token&& token) {
    if (!state_) throw boost::system::system_error(make_error_code(errc::not_held));
    return boost::asio::async_initiate<Token, detail::guard_signature<T>>(
        detail::initiation(executor_of(state_),
                           [](auto handler, state_ptr st, boost::asio::awaitable<T> w) {
                             auto strand = strand_of(*st);
                             boost::asio::any_io_executor work_ex = boost::asio::get_associated_executor(handler, strand);
                             detail::co_spawn_relayed(strand, guard_body<T>(std::move(st), std::move(w), std::move(work_ex)),
                                                   std::move(handler));
                           }),
        token, state_, std::move(work));
  }

  state_ptr state_;
};

}  // namespace mongolock

#include "mongolock/impl/lease.hpp"
