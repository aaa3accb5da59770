#pragma once
// How an acquire looks at its lock; lock's public operations each pick one. The semaphore's first
// look at each permit uses try_in_turn and a multi-lock's first look try_taking_turn, which lock
// does not offer.
#include <chrono>

namespace mongolock::detail {

// try_confirming: a try that may watch a long-silent holder (try_options::confirm_silent_holder).
// try_in_turn: one look that takes a free lock only while nobody is in its line (a semaphore's
// first look at each permit: a newcomer does not overtake waiters).
// try_taking_turn: try_in_turn that also takes its provider's turn for the name, and is busy if
// another acquire there has it; its lease keeps the turn as a wait's does (a multi-lock's first
// look, docs/design.md section 8).
// wait_looked: a wait whose caller has just seen the lock held (a semaphore's wait after its first
// look): it starts with a read instead of a blind take (docs/design.md section 10).
enum class acquire_mode { wait, try_once, try_confirming, try_in_turn, try_taking_turn, wait_looked };
// A mode that waits (parks behind this provider's acquire of the name that has the turn).
inline bool waits(acquire_mode m) noexcept { return m == acquire_mode::wait || m == acquire_mode::wait_looked; }

// The mode of a call given a timeout (every primitive's async_*_for): 0 is one look.
inline acquire_mode mode_for(std::chrono::milliseconds timeout) noexcept {
  return timeout.count() == 0 ? acquire_mode::try_once : acquire_mode::wait;
}
// The mode of a try (every primitive's try with try_options): it watches a silent holder only
// when asked to.
inline acquire_mode try_mode(bool confirm_silent_holder) noexcept {
  return confirm_silent_holder ? acquire_mode::try_confirming : acquire_mode::try_once;
}

}  // namespace mongolock::detail
