#pragma once
// The acquire_fsm parameters the FSM unit tests start from: a 1 s lease with a 100 ms margin,
// a 10..80 ms backoff and a deadline 10 s after `t0`.
#include <string>

#include "detail/acquire_fsm.hpp"

namespace test {

inline mongolock::detail::acquire_params fsm_params(mongolock::detail::boot_clock::time_point t0, std::string owner,
                                                    bool try_once = false) {
  using namespace std::chrono_literals;
  mongolock::detail::acquire_params p;
  p.try_once = try_once;
  p.owner = std::move(owner);
  p.deadline = t0 + 10s;
  p.expiry = 1000ms;
  p.margin = 100ms;
  p.backoff_min = 10ms;
  p.backoff_max = 80ms;
  p.seed = 42;
  return p;
}

}  // namespace test
