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
#include "mongolock/detail/lease_surface.hpp"

namespace mongolock {
namespace detail {
struct lease_state;
struct access;
}  // namespace detail

// Thread safety: a lease object is not (like any Asio I/O object); status(), held() and the
// accessors may be called from any thread while the lease renews itself. Handlers run on the
// executor associated with the completion handler (Asio's rule), defaulting to the lease's strand.
//
// held(), async_release, async_wait_lost and async_guard: detail/lease_surface.hpp, shared with
// multi_lease and leadership. An empty lease's release gives the reason "this lease object holds
// no acquisition". The fenced writes (fence.hpp): detail/fenced_surface.hpp.
class lease : public detail::lease_surface<lease, lease>, public detail::fenced_surface<lease> {
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

  // Releases the lock once `hold_at_least` has passed since it was acquired (held_for), keeping
  // the lease held and renewed until then: a job that ended early still keeps the others out for
  // the whole period (a job scheduled on several hosts whose clocks differ; docs/design.md
  // section 13). Completion as async_release (detail/lease_surface.hpp); if the lease is lost
  // during the hold, errc::lease_lost. Cancellation: terminal, partial and total, during the hold
  // only: completes with operation_aborted and the lease stays held (release it, or call this
  // again).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_release_after(std::chrono::milliseconds hold_at_least, Token&& token = {}) {
    return initiate_on_held(&lease::start_release_after, nullptr, std::forward<Token>(token), hold_at_least);
  }
  template <class Token = boost::asio::deferred_t>
  auto async_release_after(std::chrono::milliseconds hold_at_least, diagnostics& d, Token&& token = {}) {
    return initiate_on_held(&lease::start_release_after, &d, std::forward<Token>(token), hold_at_least);
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
    return initiate_on_held(&lease::start_record, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_record_completion(diagnostics& d, Token&& token = {}) {
    return initiate_on_held(&lease::start_record, &d, std::forward<Token>(token));
  }

 private:
  friend struct detail::access;  // the library makes leases; users get them from an acquire
  template <class, class>
  friend class detail::lease_surface;

  // ---- Fenced writes (fence.hpp): async_fenced_update / async_fenced_write come from the base;
  // this is its one hook: the lease's strand, its provider's client and its fencing token. ----
  friend class detail::fenced_surface<lease>;
  friend class multi_lease;  // a set's writes go through its first lease's client
  detail::fence_context fence_context() const;
  // ---- end of fenced writes ----

  using state_ptr = std::shared_ptr<detail::lease_state>;
  explicit lease(state_ptr s) noexcept : state_(std::move(s)) {}

  static void abandon(state_ptr) noexcept;
  static void start_release_after(state_ptr, std::chrono::milliseconds, diagnostics*, handler_ec);
  static void start_record(state_ptr, diagnostics*, handler_ec);
  static boost::system::error_code status_of(const detail::lease_state&) noexcept;
  static boost::asio::strand<boost::asio::any_io_executor> strand_of(const detail::lease_state&);

  // The hooks of lease_surface.hpp.
  using handle = state_ptr;
  static const handle& handle_of(const lease& l) noexcept { return l.state_; }
  static bool holds(const handle& s) noexcept { return s != nullptr; }
  static constexpr const char* nothing_held = "this lease object holds no acquisition";
  // The lease's strand; the system executor for an empty lease (its operations only post not_held).
  static boost::asio::any_io_executor executor_of(const handle& s) {
    if (!s) return boost::asio::system_executor();
    return strand_of(*s);
  }
  static boost::asio::strand<boost::asio::any_io_executor> guard_strand(const handle& s) { return strand_of(*s); }
  // status_of, or lease_lost once the local deadline has passed, before the watchdog says so.
  static boost::system::error_code ended(const handle& s) noexcept;
  static void start_release(state_ptr, diagnostics*, handler_ec);
  static void start_wait_lost(state_ptr, handler_ec);

  state_ptr state_;
};

}  // namespace mongolock
