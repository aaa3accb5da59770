#pragma once
// Jittered retry delay for waiters: grows while the lock stays held, resets when it is seen
// free. Pure: the random source is passed in so tests are deterministic.
#include <algorithm>
#include <chrono>
#include <random>

namespace mongolock::detail {

class backoff {
 public:
  using ms = std::chrono::milliseconds;
  backoff(ms min, ms max) : min_(min), max_(max), ceiling_(min) {}

  // Next delay, uniformly in [min, ceiling]; the ceiling doubles (up to max) on each call, so
  // sustained contention spreads waiters out while a short wait stays short.
  template <class Rng>
  ms next(Rng& rng) {
    std::uniform_int_distribution<long long> pick(min_.count(), ceiling_.count());
    const ms delay{pick(rng)};
    ceiling_ = std::min(max_, ceiling_ * 2);
    return delay;
  }

  void reset() { ceiling_ = min_; }
  ms ceiling() const { return ceiling_; }

 private:
  ms min_, max_, ceiling_;
};

}  // namespace mongolock::detail
