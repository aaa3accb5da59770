#pragma once
// One simulated run from one seed (docs/design.md section 11, "Simulation"): the seed draws the
// processes (clock rates within the documented allowance, wall clocks seconds apart, mixed lease
// lengths), the faults this run turns on, and the workload; the run goes through three phases on
// virtual time: faults (processes paused, crashed, the server failing over or out of reach), calm
// (no new fault: every waiter must get its turn), and a clean shutdown of every live process,
// after which no lock may be held by any of them.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace sim {

struct run_result {
  std::uint64_t seed = 0;
  std::uint64_t trace_hash = 0;
  std::optional<std::string> failure;  // the first oracle that failed, or a crash of the run
  std::string failing_name;
  std::string trace_excerpt;  // the failing name's last events
  std::string summary;        // what the seed drew
  std::size_t events = 0, grants = 0, operations = 0;
  std::uint64_t handlers = 0, steps = 0;  // the world's cost: handlers run, time jumps
  std::int64_t simulated_ms = 0;
};

struct run_options {
  bool verbose = false;  // the summary of what the seed drew, in the result
  // Each host's wall clock within this of true time (0: within 5 s), from the same draw.
  std::chrono::nanoseconds wall_spread{0};
};

run_result run_seed(std::uint64_t seed, const run_options& o = {});

}  // namespace sim
