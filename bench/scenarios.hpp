#pragma once
// The benchmark's scenarios, in the order main() runs them, each in a scenario_*.cpp of its own.
// Each prints its rows (common.hpp's print) and may write gnuplot data to config::out.
#include "common.hpp"

namespace bench {

// scenario_cycles.cpp: scenarios 1 and 2, and the warm-up run before any scenario.
void warm_up(const config& c);
void scenario_uncontended(const config& c);
void peer_uncontended(const config& c);
void scenario_independent(const config& c);

// scenario_handoff.cpp: scenario 3, between processes and between coroutines of one process.
void scenario_handoff(const config& c);
void scenario_local_handoff(const config& c);

// scenario_waiters_and_leases.cpp: scenarios 4 and 5.
void scenario_many_waiters(const config& c);
void scenario_many_leases(const config& c);

// scenario_multi_lock.cpp: scenario 6.
void scenario_multi_lock(const config& c);

// scenario_election.cpp: scenario 7.
void scenario_election(const config& c);

// scenario_readers.cpp: scenario 8.
void scenario_readers(const config& c);

// scenario_http.cpp: scenario 9.
void scenario_http_load(const config& c);

// scenario_fence.cpp: scenario 10 ('f' in --only), the cost of fencing a write.
void scenario_fence(const config& c);

}  // namespace bench
