#pragma once
// A lock's holder in words, as `run` (busy, --wait 0 confirming), `status` and `list` say it.
// I/O-free, so the wording is unit-tested (test/unit/cli_holder_test.cpp).
#include <cstdint>
#include <string>

#include "mongolock/provider.hpp"

namespace mongolock::cli {

// This host's wall clock in ms since 1970: `now_ms` below, for the hints only.
std::int64_t wall_now_ms();

// Whether `info` names release --force's placeholder owner, which nobody renews (lock_info::owner).
bool force_released(const lock_info& info);

// Text from a lock document (another process wrote it) made safe for a terminal.
std::string printable(std::string s);

// "is held by OWNER (host H, pid P, label L), renewed N ms ago", to follow "lock 'X' " or "it ";
// release --force's placeholder: "was force-released, and its former holder's lease is not yet
// waited out". N is `now_ms` (this host's wall clock) minus the holder's at its last renewal: a
// hint only, as wrong as either clock.
std::string held_by(const lock_info& info, std::int64_t now_ms);

// For a holder whose last renewal is older than its ttl by that hint, a parenthesis saying it may
// have crashed and when a waiter takes over; else "". The rule it states is the waiter's
// (docs/design.md section 2, expiry by observation): the holder's ttl plus the waiter's margin of
// silence seen by the waiter itself, whatever the wall clocks say; a try (--wait 0) watches only a
// holder silent for 3 x its ttl by the hint (acquire_fsm::wait_or_give_up).
std::string silence_hint(const lock_info& info, std::int64_t now_ms);

}  // namespace mongolock::cli
