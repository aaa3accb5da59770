#pragma once
// What the users of one simulated process do (docs/design.md section 11, "Simulation"): each user
// loops over lock operations drawn from the run's seed (acquire with a timeout, a try, a wait
// cancelled at a random moment, a wait without a bound), works under each lease it gets in steps
// that check it is still in force, then releases it or drops it. Each grant and each step is shown
// to the oracle; an acquire that completes past its timeout fails the run.
#include <boost/asio/awaitable.hpp>
#include <string>
#include <vector>

#include "mongolock/election.hpp"
#include "mongolock/provider.hpp"
#include "oracle.hpp"
#include "sim_random.hpp"
#include "trace.hpp"
#include "world.hpp"

namespace sim {

struct workload_options {
  std::vector<std::string> names;  // the plain locks its users share with every other process
  // A semaphore (permits "NAME#k") and a rw_lock (a reader's permit, or the writer's "NAME#w" and
  // every permit), when named; multi-locks over two of `names`; plain locks on the semaphore's
  // and the rw_lock's names too (each name is one kind's: the other is refused).
  std::string semaphore;
  int permits = 2;
  std::string rw;
  int readers = 2;
  bool multi = false, mix_kinds = false;
  // An election, when named: users campaign for it (their process's name as the value) and one
  // observer per process follows its leaders.
  std::string election;
  int users = 2;
  // Drawn from a stream of their own (`extra_seed`), so that a run without them draws as before:
  // how often a holder's work runs under the lease's guard (async_guard: steps that never look at
  // the lease), and how often a plain lock's holder records its run (async_record_completion,
  // design.md section 13) before it lets go.
  double guarded = 0, records = 0;
  std::uint64_t extra_seed = 0;
  // A run without any fault: a lease lost there fails it (design.md section 5: renewals first).
  bool no_faults = false;
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
  // No user begins another operation for `d` from now by this process's clock (the one under way
  // finishes): a quiet stretch, long enough for the TTL monitor to remove idle documents. Call it
  // inside the process.
  void quiet_for(ns d);
  int running() const { return running_; }
  const std::string& who() const { return who_; }
  mongolock::provider& provider() { return provider_; }
  std::size_t operations() const { return operations_; }

 private:
  struct holding;
  mongolock::rw_lock rw_lock(const std::string& name) const;
  boost::asio::awaitable<void> user(rng r);
  boost::asio::awaitable<void> observer();
  boost::asio::awaitable<void> keep_quiet();
  // One acquire of `surface` (a lock, semaphore, rw_lock side or multi-lock) in a mode drawn from `r`.
  template <class Value, class Surface>
  boost::asio::awaitable<std::tuple<boost::system::error_code, Value>> acquire(rng& r, const Surface& surface,
                                                                                const std::string& name, std::string& how);
  boost::asio::awaitable<void> hold(rng& r, const std::string& resource, const std::string& kind, holding h);
  std::string missing(const std::string& resource, const std::string& kind, const holding& h) const;
  // Steps until `until` (this process's clock) that never look at the lease; true if every part
  // was still in force when they ended.
  boost::asio::awaitable<bool> guarded_work(rng r, std::vector<const mongolock::lease*> parts, ns until);
  // The work under `h` as its user checks it; false if a lease was lost.
  boost::asio::awaitable<bool> checked_work(rng& r, const std::vector<const mongolock::lease*>& parts, ns until);
  boost::asio::awaitable<void> record(const std::string& resource, mongolock::lease& l);

  process& p_;
  std::string who_;
  mongolock::provider provider_;
  rng rng_, extra_;
  oracle& oracle_;
  trace& trace_;
  workload_options o_;
  bool stopping_ = false;
  ns quiet_until_{0};
  int running_ = 0;
  std::size_t operations_ = 0;
};

}  // namespace sim
