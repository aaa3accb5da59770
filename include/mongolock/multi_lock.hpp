#pragma once
// Several locks taken all-or-nothing (provider::create_multi_lock). The names are taken one after
// another in one canonical order (byte order of the names), so two multi-locks over overlapping
// sets never wait for each other in a cycle: no deadlock. A failure on the way (timeout, busy,
// cancellation, server error) releases what was already taken before the operation completes.
// Each name keeps its own lease and fencing token; one guard watches them all.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mongolock/error.hpp"
#include "mongolock/detail/acquire_surface.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/limits.hpp"
#include "mongolock/lock.hpp"

namespace mongolock {

// The leases of one multi_lock acquisition, in the multi_lock's name order. Thread safety: as
// lease (not thread-safe; status(), held() and the accessors may be called from any thread).
// Handlers default to the strand of the first lease.
//
// held(), async_release, async_wait_lost and async_guard: detail/lease_surface.hpp, over all the
// leases. async_release releases every lease at once (one command for the set, docs/design.md
// section 14) and completes with the first error in name order, its reason as
// "lock 'NAME': <its reason>"; async_wait_lost completes when the first lease ends; the guard's
// work is cancelled when any lease is lost. An empty multi_lease's release gives the reason
// "this multi_lease holds no acquisition".
class multi_lease : public detail::lease_surface<multi_lease, multi_lease>,
                    public detail::fenced_surface<multi_lease> {
 public:
  multi_lease() noexcept = default;
  multi_lease(multi_lease&&) noexcept = default;
  multi_lease& operator=(multi_lease&&) noexcept = default;
  // Leases not released yet are released in the background, as ~lease does.
  ~multi_lease() = default;

  explicit operator bool() const noexcept { return leases_ && !leases_->empty(); }
  // {} while every lease is held; else the status of the first (in name order) that is not:
  // errc::lease_lost, errc::released; errc::not_held for an empty multi_lease.
  boost::system::error_code status() const noexcept;
  // In name order; empty for an empty multi_lease.
  const std::vector<lease>& leases() const noexcept;
  // The fencing token of `name`'s lease; 0 if `name` is not one of them.
  std::int64_t fencing_token(std::string_view name) const noexcept;
  // The highest of the leases' tokens (0 when empty). For a rw_lock's writer, which holds every
  // permit of its name, it is above every token of the readers it excluded and of earlier
  // writers: the token to fence a writer's writes with.
  std::int64_t highest_fencing_token() const noexcept;
  // The least of the leases' time_left() (lease.hpp): how long the whole set stays held without
  // a renewal; 0 when empty or once any has ended.
  std::chrono::milliseconds time_left() const noexcept;

 private:
  friend struct detail::access;  // made by multi_lock's acquire
  template <class, class>
  friend class detail::lease_surface;

  // ---- Fenced writes (fence.hpp): async_fenced_update / async_fenced_write come from the base,
  // fenced with highest_fencing_token() (docs/design.md section 15: the rule for a set); this is
  // its one hook. ----
  friend class detail::fenced_surface<multi_lease>;
  detail::fence_context fence_context() const;
  // ---- end of fenced writes ----

  // Shared with the operations in flight: moving or destroying this object meanwhile is safe.
  using shared = std::shared_ptr<std::vector<lease>>;
  explicit multi_lease(std::vector<lease> leases) : leases_(std::make_shared<std::vector<lease>>(std::move(leases))) {}

  // The hooks of lease_surface.hpp.
  using handle = shared;
  static const handle& handle_of(const multi_lease& m) noexcept { return m.leases_; }
  static bool holds(const handle& s) noexcept { return s && !s->empty(); }
  static constexpr const char* nothing_held = "this multi_lease holds no acquisition";
  static boost::asio::any_io_executor executor_of(const handle& s) {
    if (!holds(s)) return boost::asio::system_executor();
    return s->front().get_executor();
  }
  static boost::asio::strand<boost::asio::any_io_executor> guard_strand(const handle& s) {
    return s->front().get_executor();
  }
  // The end of the first lease (in name order) that ended or passed its deadline (lease::ended).
  static boost::system::error_code ended(const handle& s) noexcept;
  static void start_release(shared, diagnostics*, handler_ec);
  static void start_wait_lost(shared, handler_ec);

  shared leases_;
};

// Made by provider::create_multi_lock. A list of lock names plus their provider: cheap, no
// server state until acquired; copy freely. Handlers default to the provider's executor.
//
// Acquire (the set of detail/acquire_surface.hpp), completing with void(error_code, multi_lease).
// A wait takes every lock, waiting for each in turn (as lock::async_acquire), within one timeout
// for the whole set. If a lease taken early is lost while a later lock is awaited, everything is
// released and the set is taken again (within the same timeout). A try (and
// async_acquire_for(0)) looks at each lock in name order, stopping at the first held: errc::busy,
// or errc::timeout if `within` ran out before every lock was looked at (the reason names the
// first not looked at). On any failure every lock taken so far is released before completion.
// Extra errors: errc::invalid_options for an empty list, a name given twice or more than
// limits::max_multi_lock_names names, errc::invalid_name for a bad name (nothing is taken then).
// Cancellation: until the set is complete.
class multi_lock : public detail::acquire_surface<multi_lock, multi_lease> {
 public:
  // The names as given (acquisition sorts them; duplicates are refused when acquiring).
  const std::vector<std::string>& names() const noexcept { return names_; }

 private:
  friend class provider;
  using handler = boost::asio::any_completion_handler<void(boost::system::error_code, multi_lease)>;
  multi_lock(lock prototype, std::vector<std::string> names) : prototype_(std::move(prototype)), names_(std::move(names)) {}

  static void start_acquire(lock prototype, std::vector<std::string> names, detail::acquire_mode mode,
                    std::optional<std::chrono::milliseconds> timeout, diagnostics* d, handler h);
  static boost::asio::any_io_executor executor_of(const lock& l) noexcept;

  // The one hook of the acquire set.
  friend class detail::acquire_surface<multi_lock, multi_lease>;
  template <class Token>
  auto start(detail::acquire_request r, diagnostics* d, Token&& token) const {
    return detail::async_op<void(boost::system::error_code, multi_lease)>(
        detail::initiation(executor_of(prototype_),
                           [](auto h, lock proto, std::vector<std::string> names, detail::acquire_mode mode,
                              std::optional<std::chrono::milliseconds> t, diagnostics* diag) {
                             start_acquire(std::move(proto), std::move(names), mode, t, diag, std::move(h));
                           }),
        token, prototype_, names_, r.mode, r.timeout, d);
  }

  lock prototype_;  // a lock of this provider; its name is unused
  std::vector<std::string> names_;
};

}  // namespace mongolock
