#pragma once
// Decides when a held lock counts as expired WITHOUT reading anybody's wall clock.
//
// The holder writes a fresh random heartbeat ("beat") at every renewal. A waiter remembers the
// (owner, token, beat) triple it saw and the monotonic time its read RETURNED. Only when the
// very same triple is still there after expiry + margin of the waiter's own monotonic clock may it
// take over, with a compare-and-swap on that triple. The holder, meanwhile, cancels its work at
// (send time of its last successful renewal) + expiry - margin. Since that renewal was applied
// before the waiter's read, the holder stops at least 2 * margin before the takeover, whatever
// the clocks' offsets; only their rates must agree within margin / expiry (10% by default).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "model/clocks.hpp"
#include "model/lock_document.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

class expiry_observer {
 public:
  using clock = boot_clock;

  // Record what a read returned at `received`. Returns true when it differs from before
  // (the holder renewed, or the lock changed hands), which resets the observation window.
  bool observe(const held_state& seen, clock::time_point received, std::chrono::milliseconds margin) {
    if (seen_ && *seen_ == seen) return false;
    seen_ = seen;
    expires_at_ = received + bounded(seen.expiry) + margin;
    return true;
  }

  // The expiry a document may claim: what validate() lets a mongolock holder write. A document
  // written by something else ("expiry_ms: 0", "-1", a string, 10^12) must not make a waiter
  // take over sooner than any real holder would allow, nor overflow the deadline arithmetic.
  static std::chrono::milliseconds bounded(std::chrono::milliseconds claimed) {
    return std::clamp(claimed, limits::min_expiry, limits::max_expiry);
  }
  static bool out_of_bounds(std::chrono::milliseconds claimed) { return bounded(claimed) != claimed; }

  void forget() { seen_.reset(); }
  bool expired(clock::time_point now) const { return seen_ && now >= expires_at_; }
  // When an unchanged observation would turn into "expired"; nullopt when nothing is observed.
  std::optional<clock::time_point> expires_at() const {
    return seen_ ? std::optional{expires_at_} : std::nullopt;
  }
  const std::optional<held_state>& seen() const { return seen_; }

 private:
  std::optional<held_state> seen_;
  clock::time_point expires_at_{};
};

}  // namespace mongolock::detail
