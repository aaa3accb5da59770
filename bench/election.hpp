#pragma once
// Scenario 7: leader election failover. Candidates are child processes of the benchmark
// (`mongolock-bench --child --algo leader`); the parent SIGKILLs whoever leads and times how
// long until another candidate has won and proclaimed, against the observed-expiry window.
#include <string>
#include <vector>

#include "handoff.hpp"

namespace bench {

// Child side: campaigns; on winning appends "LEADER <steady ns> <term>" to a.out, then leads
// until killed.
int run_leader_child(const child_args& a, int expiry_ms);

struct failover_result {
  std::vector<double> failover_ms;  // SIGKILL of the leader -> the next leader's win
  std::vector<double> terms_gap;    // next term - killed term (1 = no term was skipped)
};

// Parent side: `candidates` children, the leader killed `rounds` times (and replaced).
failover_result election_failover(const std::string& self, const std::string& uri, const std::string& out_dir,
                                  int candidates, int rounds, int expiry_ms);

}  // namespace bench
