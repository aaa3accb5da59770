#pragma once
// Scenario 3 runs in child processes (`mongolock-bench --child ...`): each process runs C
// workers contending for one lock, records (acquired, released) CLOCK_MONOTONIC timestamps and
// how many server commands it sent, and writes them to a file the parent merges.
#include <string>

namespace bench {

struct child_args {
  std::string uri, name, out, collection = "handoff", algo = "mongolock";  // algo: mongolock | seed
  int workers = 4, hold_ms = 10, seconds = 5;
};

int run_child(const child_args& a);

}  // namespace bench
