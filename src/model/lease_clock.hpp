#pragma once
// The holder's side of the lease arithmetic. The local deadline is measured from when the last
// successful acquire/renew request was SENT (not when its reply came back), minus a margin, so a
// reply delayed in the network or a hung call can only make the deadline earlier, never later.
#include <chrono>

#include "model/boot_clock.hpp"

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

}  // namespace mongolock::detail
