#pragma once
// The holder's side of the lease arithmetic. The local deadline is measured from when the last
// successful acquire/renew request was SENT (not when its reply came back), minus a margin, so a
// reply delayed in the network or a hung call can only make the deadline earlier, never later.
#include <algorithm>
#include <chrono>

#include "model/clocks.hpp"

namespace mongolock::detail {

class lease_clock {
 public:
  using clock = boot_clock;  // counts through a system suspend

  lease_clock(clock::time_point acquired_sent, std::chrono::milliseconds expiry,
              std::chrono::milliseconds margin)
      : expiry_(expiry), margin_(margin), last_ok_sent_(acquired_sent) {}

  // A renewal sent at `sent` succeeded. Older replies arriving late never move the deadline back.
  void renewed(clock::time_point sent) {
    if (sent > last_ok_sent_) last_ok_sent_ = sent;
  }

  clock::time_point deadline() const { return last_ok_sent_ + expiry_ - margin_; }
  std::chrono::milliseconds expiry() const { return expiry_; }
  std::chrono::milliseconds margin() const { return margin_; }
  bool lost_by(clock::time_point now) const { return now >= deadline(); }

 private:
  std::chrono::milliseconds expiry_, margin_;
  clock::time_point last_ok_sent_;
};

// A lease's first renewal (docs/design.md section 7, "The first renewal"). A lease's clock can
// start before its grant (a take answered late, a lock handed over from the line: its clock starts
// at the head's last entry write, moved back further when the releaser wrote a shorter expiry),
// so the first renewal is due `renew_every` after the clock's start, as every later one is due
// `renew_every` after the last renewal, or at once if that is past. A grant needs room for that
// renewal to go out and come back before the deadline: the margin, or the room a renewal has in
// steady state (E - m - R) where that is smaller, and never more than (E - m) / 4, so that a
// large margin does not shrink the time a grant may take to (E - 2m). Options keep R + m < E, so
// the room is positive, a take answered within max(R, 3 (E - m) / 4) of its send is granted, and
// a waiter in line has (E - m) / 4 after its refresh period to read a hand-off (acquire_fsm.cpp).
inline std::chrono::milliseconds first_renewal_room(std::chrono::milliseconds expiry, std::chrono::milliseconds margin,
                                                    std::chrono::milliseconds renew_every) {
  return std::max(std::chrono::milliseconds{1}, std::min({margin, expiry - margin - renew_every, (expiry - margin) / 4}));
}

// The latest instant a lease whose clock starts at `clock_start` may be granted.
inline boot_clock::time_point grant_bound(boot_clock::time_point clock_start, std::chrono::milliseconds expiry,
                                          std::chrono::milliseconds margin, std::chrono::milliseconds renew_every) {
  return clock_start + expiry - margin - first_renewal_room(expiry, margin, renew_every);
}

}  // namespace mongolock::detail
