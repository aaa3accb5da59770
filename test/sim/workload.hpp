#pragma once
// What the users of one simulated process do (docs/design.md section 11, "Simulation"): each user
// loops over lock operations drawn from the run's seed (acquire with a timeout, a try, a wait
// cancelled at a random moment, a wait without a bound), works under each lease it gets in steps
// that check it is still in force, then releases it or drops it. Each grant and each step is shown
// to the oracle; an acquire that completes past its timeout fails the run.
#include <boost/asio/awaitable.hpp>
#include <string>
#include <vector>

#include "mongolock/provider.hpp"
#include "oracle.hpp"
#include "sim_random.hpp"
#include "trace.hpp"
#include "world.hpp"

namespace sim {

struct workload_options {
  std::vector<std::string> names;  // the locks its users share with every other process
  int users = 2;
  ns think_max{std::chrono::seconds{2}};  // between two operations
  ns hold_max{std::chrono::seconds{20}};  // work under a lease, at most
  ns wait_max{std::chrono::seconds{20}};  // an acquire's timeout or cancellation, at most
  // How late past its timeout an acquire may complete (by the process's clock): the reply already
  // on its way is not waited for, so the bound is the timer's (design.md section 3).
  ns timeout_slack{std::chrono::milliseconds{50}};
};

class workload {
 public:
  workload(process& p, std::string who, mongolock::provider prov, rng r, oracle& o, trace& t, workload_options wo);
  void start();
  // No user begins another operation (the one under way finishes).
  void stop() { stopping_ = true; }
  int running() const { return running_; }
  const std::string& who() const { return who_; }
  mongolock::provider& provider() { return provider_; }
  std::size_t operations() const { return operations_; }

 private:
  boost::asio::awaitable<void> user(rng r);
  boost::asio::awaitable<void> hold(rng& r, mongolock::lease l);

  process& p_;
  std::string who_;
  mongolock::provider provider_;
  rng rng_;
  oracle& oracle_;
  trace& trace_;
  workload_options o_;
  bool stopping_ = false;
  int running_ = 0;
  std::size_t operations_ = 0;
};

}  // namespace sim
