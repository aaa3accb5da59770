#pragma once
// Simulated processes on one thread and on virtual time (docs/design.md section 11, "Virtual
// time"). Each process has its own io_context and clocks; the world runs every process's ready
// handlers with that process's clocks installed, and when none is ready moves true time on to the
// earliest timer any process has armed. Nothing sleeps: a simulated hour of timers costs what its
// handlers cost.
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <algorithm>
#include <deque>
#include <functional>
#include <memory>

#include "model/clocks.hpp"
#include "process_clock.hpp"
#include "sim_random.hpp"

namespace sim {

struct process {
  process(const true_clock& t, std::int64_t rate_ppm, ns boot_at_start, ns wall_at_start, std::uint64_t seed)
      : clock(t, rate_ppm, boot_at_start, wall_at_start), random(seed) {}
  process_clock clock;
  process_random random;
  boost::asio::io_context io;
  // Armed two centuries out, never due: with a timer in its queue, each probe of this process's
  // reactor asks the timers when they fall due and is told "now" (model/clocks.hpp's wait traits
  // under a time source), so the probe never sleeps, even for a process with no timer of its own.
  mongolock::detail::steady_timer sentinel{io};
  // Frozen (a SIGSTOP) until this true time: none of its handlers runs, its clocks go on.
  ns paused_until{0};
  // True time spent frozen so far (an operation that spans a pause may end that much later).
  ns paused_total{0};
  // Freezes it for `d` of true time from `now` (a pause under way is extended, if it ends sooner).
  void pause(ns now, ns d) {
    const ns from = std::max(now, paused_until);
    if (now + d <= from) return;
    paused_total += now + d - from;
    paused_until = now + d;
  }
  // Crashed: nothing of it runs again (its memory is gone; what it wrote stays on the server).
  bool crashed = false;
  // Something may be ready in it that its own handlers did not leave (a reply posted to it, a call
  // into it from outside): the world polls it, and asks its reactor for its timers again.
  bool mail = true;
  // Its earliest timer when the world last asked, while `asked` (nothing ran in it since).
  ns next_due = never;
  bool asked = false;
};

// Installs a process's clocks and randomness on this thread for the scope's life: what its
// handlers see, and what a test must install to call into it (which the world then polls).
class inside {
 public:
  explicit inside(process& p) noexcept : time_(&p.clock), random_(&p.random) { p.mail = true; }

 protected:
  struct quiet {};
  inside(process& p, quiet) noexcept : time_(&p.clock), random_(&p.random) {}

 private:
  mongolock::detail::time_source_scope time_;
  mongolock::detail::random_source_scope random_;
};

class world {
 public:
  // `seed`: where the processes' randomness comes from (each its own stream).
  explicit world(std::uint64_t seed = 1) : seeds_(seed) {}

  // A new process whose clocks run `rate_ppm` fast (negative: slow), its boot clock from
  // `boot_at_start` (a host up for that long) and its wall clock from `wall_at_start`.
  process& add_process(std::int64_t rate_ppm = 0, ns boot_at_start = std::chrono::hours{1},
                       ns wall_at_start = std::chrono::hours{24 * 20'000});

  // Runs until `done()` holds (true) or no event is left before true time `until` (false: true
  // time is then `until`, or where the last event left it if nothing is armed at all).
  bool run_until(const std::function<bool()>& done, ns until);
  // Runs until no process has anything left to do (true), or until true time `until` (false).
  bool run_until_idle(ns until);
  // Runs every event up to true time `until`.
  void run_for(ns d) { run_until([] { return false; }, now() + d); }

  ns now() const { return time_.now(); }
  const true_clock& time() const { return time_; }
  // Handlers run and time steps taken so far (the cost of a run, for its tests).
  std::uint64_t handlers() const { return handlers_; }
  std::uint64_t steps() const { return steps_; }

 private:
  // Runs every ready handler of every process; the earliest timer due after that, or `never`.
  ns settle();
  bool awake(const process& p) const;

  true_clock time_;
  rng seeds_;
  std::deque<std::unique_ptr<process>> processes_;
  std::uint64_t handlers_ = 0, steps_ = 0;
};

}  // namespace sim
