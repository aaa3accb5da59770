// mongolock-sim: runs the simulation (docs/design.md section 11, "Simulation") for one seed or
// many, and says which passed. A failing seed prints the command that replays it and the last
// events of the lock it failed on.
//   mongolock-sim --seed S [--verbose]        one seed: "seed S trace HASH PASS" (or FAIL ...)
//   mongolock-sim --seeds N [--from S]        N seeds from S (1 by default): "N passed, N failed"
//   mongolock-sim --minutes M [--from S]      seeds from S until M minutes of CPU have passed
//   --wall-spread MINUTES                     with any of them: each host's wall clock within
//                                             that of true time, not 5 s (the token clock's
//                                             documented limit, docs/design.md section 1)
// Exit: 0 when every seed passed, 1 when one failed, 64 on a bad command line.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <string>

#include "scenario.hpp"

namespace {

int usage(const char* why) {
  std::cerr << "mongolock-sim: " << why
            << "\nusage: mongolock-sim --seed S [--verbose] | --seeds N [--from S] | --minutes M [--from S]"
               " [--wall-spread MINUTES]\n";
  return 64;
}

bool number(const char* text, std::uint64_t& out) {
  if (!text || !*text) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(text, &end, 10);
  return errno == 0 && *end == '\0' && text[0] != '-';
}

double cpu_seconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// One seed; prints its line (and, failing, how to replay it). Whether it passed.
bool one(std::uint64_t seed, sim::run_options o, bool quiet_pass) {
  const bool verbose = o.verbose;
  const auto spread = std::chrono::duration_cast<std::chrono::minutes>(o.wall_spread).count();
  const auto r = sim::run_seed(seed, o);
  if (verbose) std::cout << "seed " << seed << ": " << r.summary << "\n";
  if (!r.failure) {
    if (!quiet_pass)
      std::cout << "seed " << seed << " trace " << hex(r.trace_hash) << " PASS (" << r.grants << " grants, "
                << r.operations << " operations, " << r.events << " events; " << r.simulated_ms / 1000 << " simulated s, "
                << r.handlers << " handlers, " << r.steps << " time steps)\n";
    return true;
  }
  std::cout << "seed " << seed << " trace " << hex(r.trace_hash) << " FAIL: " << *r.failure << "\n"
            << "  replay: mongolock-sim --seed " << seed
            << (spread > 0 ? " --wall-spread " + std::to_string(spread) : std::string()) << " --verbose\n"
            << "  the last events of " << (r.failing_name.empty() ? "the run" : "lock " + r.failing_name) << ":\n"
            << r.trace_excerpt;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 0, seeds = 0, from = 1, minutes = 0, spread = 0;
  bool have_seed = false, verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--verbose") {
      verbose = true;
    } else if (a == "--seed") {
      if (!number(v, seed)) return usage("--seed needs a number");
      have_seed = true, ++i;
    } else if (a == "--seeds") {
      if (!number(v, seeds) || seeds == 0) return usage("--seeds needs a count above 0");
      ++i;
    } else if (a == "--from") {
      if (!number(v, from)) return usage("--from needs a number");
      ++i;
    } else if (a == "--wall-spread") {
      if (!number(v, spread) || spread == 0 || spread > 24 * 60) return usage("--wall-spread needs minutes, 1..1440");
      ++i;
    } else if (a == "--minutes") {
      if (!number(v, minutes) || minutes == 0) return usage("--minutes needs a count above 0");
      ++i;
    } else {
      return usage(("unknown argument " + a).c_str());
    }
  }
  if (have_seed + (seeds > 0) + (minutes > 0) != 1) return usage("give one of --seed, --seeds, --minutes");
  sim::run_options o;
  o.verbose = verbose;
  o.wall_spread = std::chrono::minutes{spread};
  if (have_seed) return one(seed, o, false) ? 0 : 1;

  std::uint64_t passed = 0, failed = 0;
  const double start = cpu_seconds();
  for (std::uint64_t s = from;; ++s) {
    if (seeds > 0 && s - from >= seeds) break;
    if (minutes > 0 && cpu_seconds() - start >= 60.0 * static_cast<double>(minutes)) break;
    (one(s, o, !verbose) ? passed : failed)++;
  }
  std::cout << passed << " passed, " << failed << " failed (seeds " << from << ".." << from + passed + failed - 1 << ", "
            << static_cast<long long>((cpu_seconds() - start) * 1000) << " ms of CPU)\n";
  return failed == 0 ? 0 : 1;
}
