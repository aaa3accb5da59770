#pragma once
// What a held lease does next, decided without I/O and without reading a clock: the renewal
// loop and the watchdog in src/engine/lease_state.cpp perform each action and feed what happened
// back through resume(), one lease_input each, with the time they observed (boot_clock: suspended
// time counts). Unit-tested in test/sansio/lease_fsm_test.cpp.
//
// Rules (docs/design.md, sections 1 and 6):
// - the local deadline is the send time of the last successful acquire/renew + expiry - margin;
// - past it the lease is lost: no renewal is sent, and a success that comes back after it (a
//   reply delayed past the deadline, a suspend while the call was in flight) or that was sent
//   after it revives nothing;
// - a renewal that matches nothing means another owner has the lock: lost at once;
// - a failed renewal is retried sooner (every/8 .. every/4, jittered); the deadline stays.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "model/clocks.hpp"
#include "model/jitter_rng.hpp"
#include "model/lease_clock.hpp"
#include "model/lock_document.hpp"

namespace mongolock::detail {

struct lease_action {
  enum class kind {
    wait_until,  // sleep until `at`, then resume(timer)
    renew,       // send a renewal now, then resume(renewed) with its send time
    lost,        // the local deadline passed: end the lease; free the lock 2 x margin later
    taken,       // the document names another owner: end the lease
  };
  kind what;
  boot_clock::time_point at{};
};

// What happened: the lease began (granted), a wait ended, or a renewal answered (`sent`: when it
// left; only a renewal that left before the deadline extends the lease).
struct lease_input {
  using time_point = boot_clock::time_point;
  enum class kind { start, timer, renewed };

  kind what = kind::start;
  time_point now{}, sent{};
  outcome<bool> wrote;  // renewed

  static lease_input start(time_point now) { return {kind::start, now, {}, {}}; }
  static lease_input timer(time_point now) { return {kind::timer, now, {}, {}}; }
  static lease_input renewed(outcome<bool> r, time_point sent, time_point now) {
    return {kind::renewed, now, sent, std::move(r)};
  }
};

class lease_fsm {
 public:
  using time_point = boot_clock::time_point;

  lease_fsm(time_point acquired_sent, std::chrono::milliseconds expiry, std::chrono::milliseconds margin,
            std::chrono::milliseconds renew_every, std::uint64_t seed)
      : clock_(acquired_sent, expiry, margin), acquired_sent_(acquired_sent), every_(renew_every), rng_(seed) {}

  // start: the first renewal is due `renew_every` after the clock's start, not after the grant
  // (the clock of a handed-over lease starts before it): lease_clock.hpp, first_renewal_room.
  lease_action resume(const lease_input& in);
  // The watchdog: true once the deadline has passed (the driver then ends the lease as `lost`).
  bool lost_by(time_point now) const { return clock_.lost_by(now); }
  time_point deadline() const { return clock_.deadline(); }
  // When the take that acquired the lease was sent: a hold is counted from it (lease::held_for).
  time_point acquired_sent() const { return acquired_sent_; }
  std::chrono::milliseconds expiry() const { return clock_.expiry(); }
  std::chrono::milliseconds margin() const { return clock_.margin(); }
  std::chrono::milliseconds renew_every() const { return every_; }
  // Successful renewals so far.
  std::int64_t beats() const { return beats_; }

 private:
  static lease_action wait(time_point at) { return {lease_action::kind::wait_until, at}; }
  lease_action start(time_point now) const { return wait(std::max(now, acquired_sent_ + every_)); }
  lease_action on_timer(time_point now) const;
  lease_action on_renewed(const outcome<bool>& r, time_point sent, time_point now);

  lease_clock clock_;
  time_point acquired_sent_;
  std::chrono::milliseconds every_;
  jitter_rng rng_;
  std::int64_t beats_ = 0;
};

}  // namespace mongolock::detail
