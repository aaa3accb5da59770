#pragma once
// The acquire_fsm parameters the FSM unit tests start from: a 1 s lease with a 100 ms margin,
// a 10..80 ms backoff and a deadline 10 s after `t0`.
#include <string>
#include <vector>

#include "sansio/acquire_fsm.hpp"

namespace test {

// The line tests' world: the FSM's names, a start time and two owner ids.
namespace line_world {
using mongolock::detail::acquire_action;
using mongolock::detail::acquire_fsm;
using mongolock::detail::acquire_input;
using mongolock::detail::line_entry;
using mongolock::detail::lock_doc;
using kind = acquire_action::kind;
using tp = mongolock::detail::boot_clock::time_point;
inline const tp t0{std::chrono::seconds{1000}};
inline const std::string me = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", other = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
}  // namespace line_world

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

// The line tests' document: held by `owner` (token 5, beat 1), with `line` waiting.
inline mongolock::detail::lock_doc line_doc(std::string owner, std::vector<mongolock::detail::line_entry> line = {},
                                            std::int64_t tickets = 0,
                                            std::chrono::milliseconds expiry = std::chrono::milliseconds{1000}) {
  mongolock::detail::lock_doc d;
  d.exists = true;
  d.held = mongolock::detail::held_state{std::move(owner), 5, 1, expiry};
  d.line = std::move(line);
  d.tickets = tickets;
  d.waiting = static_cast<std::int64_t>(d.line.size());
  return d;
}

inline mongolock::detail::outcome<mongolock::detail::lock_doc> seen(mongolock::detail::lock_doc d) {
  return mongolock::detail::success(std::move(d));
}

}  // namespace test
