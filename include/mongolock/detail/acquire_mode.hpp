#pragma once
// How an acquire looks at its lock; lock's public operations each pick one, and the semaphore's
// first look at each permit uses try_in_turn, which lock does not offer.

namespace mongolock::detail {

// try_confirming: a try that may watch a long-silent holder (try_options::confirm_silent_holder).
// try_in_turn: one look that takes a free lock only while nobody is in its line (a semaphore's
// first look at each permit: a newcomer does not overtake waiters).
enum class acquire_mode { wait, try_once, try_confirming, try_in_turn };

}  // namespace mongolock::detail
