#pragma once
// mongolock-soak (docs/design.md section 11): several processes take a few lock names through a
// fault proxy for a long time while holders are killed and paused; see supervisor.cpp.
#include <chrono>
#include <string>

namespace soak {

struct worker_args {
  std::string uri, dir, collection;
  int names = 3;
  std::chrono::milliseconds expiry{1000};
  bool no_lock = false;  // the checker's own test: enter the resource without the lock
};

int run_worker(const worker_args&);

}  // namespace soak
