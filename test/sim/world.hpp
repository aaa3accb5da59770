#pragma once
// Simulated processes on one thread and on virtual time (docs/design.md section 11, "Virtual
// time"). Each process has its own io_context and clocks; the world runs every process's ready
// handlers with that process's clocks installed, and when none is ready moves true time on to the
// earliest timer any process has armed. Nothing sleeps: a simulated hour of timers costs what its
// handlers cost.
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "process_clock.hpp"

namespace sim {

struct process {
  process(const true_clock& t, std::int64_t rate_ppm, ns boot_at_start, ns wall_at_start)
      : clock(t, rate_ppm, boot_at_start, wall_at_start) {}
  process_clock clock;
  boost::asio::io_context io;
};

class world {
 public:
  // A new process whose clocks run `rate_ppm` fast (negative: slow), its boot clock from
  // `boot_at_start` (a host up for that long) and its wall clock from `wall_at_start`.
  process& add_process(std::int64_t rate_ppm = 0, ns boot_at_start = std::chrono::hours{1},
                       ns wall_at_start = std::chrono::hours{24 * 20'000});

  // Runs until `done()` holds (true) or no event is left before true time `until` (false: true
  // time is then `until`, or where the last event left it if nothing is armed at all).
  bool run_until(const std::function<bool()>& done, ns until);
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

  true_clock time_;
  std::deque<std::unique_ptr<process>> processes_;
  std::uint64_t handlers_ = 0, steps_ = 0;
};

}  // namespace sim
