#pragma once
// Scenario 3 runs in child processes (`mongolock-bench --child ...`): each process runs C
// workers contending for one lock, records (acquired, released) CLOCK_MONOTONIC timestamps and
// how many server commands it sent, and writes them to a file the parent merges. Between two
// acquisitions a worker "thinks" for think_ms: without it the releaser asks again at once and,
// with every other waiter asleep in its backoff, simply takes the lock back (measured: one
// waiter got 545 of 545 acquisitions), and "hand-off" would time a process handing to itself.
#include <string>

namespace bench {

struct child_args {
  std::string uri, name, out, collection = "handoff", algo = "mongolock";  // mongolock | seed | dlreimpl
  int workers = 4, hold_ms = 10, think_ms = 20, seconds = 5;
};

int run_child(const child_args& a);

}  // namespace bench
