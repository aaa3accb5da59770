#include "sansio/lease_fsm.hpp"

#include <algorithm>
#include <random>

namespace mongolock::detail {

using lease_kind = lease_action::kind;

lease_action lease_fsm::resume(const lease_input& in) {
  switch (in.what) {
    case lease_input::kind::start: return start(in.now);
    case lease_input::kind::timer: return on_timer(in.now);
    case lease_input::kind::renewed: return on_renewed(in.wrote, in.sent, in.now);
  }
  return {lease_kind::lost};  // not reached: every kind is handled above
}

lease_action lease_fsm::on_timer(time_point now) const {
  // Past the deadline (a suspend carried us there and the renewal timer woke before the
  // watchdog): lost, whatever a renewal would answer now.
  if (clock_.lost_by(now)) return {lease_kind::lost};
  return {lease_kind::renew};
}

lease_action lease_fsm::on_renewed(const outcome<bool>& r, time_point sent, time_point now) {
  const bool renewed = !r.ec && r.value;
  // A renewal that left at or after the deadline extends nothing: the holder was told to stop
  // then (renewals go out with the provider's batch, not on this lease's own timer).
  if (renewed && clock_.lost_by(sent)) return {lease_kind::lost};
  if (renewed) {
    clock_.renewed(sent);
    ++beats_;
  }
  // Checked after crediting the renewal: only a reply that left in time can extend the lease.
  if (clock_.lost_by(now)) return {lease_kind::lost};
  if (renewed) return wait(now + every_);
  if (!r.ec) return {lease_kind::taken};
  // Transient: retry sooner, jittered, while the watchdog keeps the deadline honest.
  const long long e = every_.count();
  std::uniform_int_distribution<long long> pick(std::max<long long>(e / 8, 5), std::max<long long>(e / 4, 10));
  return wait(now + std::chrono::milliseconds{pick(rng_)});
}

}  // namespace mongolock::detail
