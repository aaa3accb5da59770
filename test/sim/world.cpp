#include "world.hpp"

#include "model/clocks.hpp"

#include <algorithm>
#include <stdexcept>

namespace sim {

namespace {
// Handlers run without true time passing before the world gives up: a loop of posts or of timers
// due at once that never lets time move on is a bug of the simulated program or of the world.
constexpr std::uint64_t max_rounds = 10'000'000;

// The clock of one probe of a reactor: run_one_until() reads it as 0 (before its deadline, so it
// makes one wait with a positive timeout), then as a second later (past it, so it returns). The
// positive timeout is what makes the reactor ask each timer queue for its earliest expiry, which
// the wait traits report to the installed time source; the wait itself is zero under it.
struct one_wait_clock : mongolock::detail::monotonic_clock_types<one_wait_clock, std::chrono::microseconds> {
  static inline thread_local int reads = 0;
  static time_point now() { return time_point{reads++ == 0 ? duration{0} : std::chrono::seconds{1}}; }
};
}  // namespace

process& world::add_process(std::int64_t rate_ppm, ns boot_at_start, ns wall_at_start) {
  processes_.push_back(std::make_unique<process>(time_, rate_ppm, boot_at_start, wall_at_start, seeds_.next()));
  process& p = *processes_.back();
  const inside in(p);  // and mail: its timers are asked for at the next settle
  p.sentinel.expires_after(std::chrono::hours{24 * 365 * 200});
  p.sentinel.async_wait([](boost::system::error_code) {});
  return p;
}

bool world::awake(const process& p) const { return !p.crashed && p.paused_until <= time_.now(); }

namespace {
// The world's own way in: polling a process is not mail to it.
struct polling : inside {
  explicit polling(process& p) noexcept : inside(p, quiet{}) {}
};
}  // namespace

ns world::settle() {
  for (std::uint64_t round = 0; round < max_rounds; ++round) {
    bool ran = false;
    for (auto& p : processes_) {
      // Nothing can be ready in a process that got no mail and has no timer due.
      if (!awake(*p) || (!p->mail && p->asked && p->next_due > time_.now())) continue;
      const polling mine(*p);
      if (p->io.stopped()) p->io.restart();
      // Every ready handler, and every timer due now (no_kernel_waits.cpp: each reactor run checks).
      const auto n = p->io.poll();
      handlers_ += n;
      ran = ran || n > 0;
      p->mail = false;
      p->asked = false;  // its timers may have changed
    }
    if (ran) continue;
    // Quiet: each process whose timers may have changed is asked for its earliest one.
    ns next = never;
    for (auto& p : processes_) {
      if (p->crashed) continue;
      if (!awake(*p)) {  // its timers wait for it: the next event of a frozen process is its thaw
        next = std::min(next, p->paused_until);
        continue;
      }
      if (!p->asked) {
        const polling mine(*p);
        p->clock.forget_due();
        if (p->io.stopped()) p->io.restart();
        one_wait_clock::reads = 0;
        const auto n = p->io.run_one_until(one_wait_clock::time_point{std::chrono::milliseconds{1}});
        handlers_ += n;
        if (n > 0) {
          ran = true;
          continue;
        }
        p->asked = true;
        p->next_due = p->clock.next_due();
      }
      next = std::min(next, p->next_due);
    }
    if (!ran) return next;
  }
  throw std::runtime_error("sim: handlers kept running for " + std::to_string(max_rounds) +
                           " rounds without true time moving on");
}

bool world::run_until(const std::function<bool()>& done, ns until) {
  for (;;) {
    const ns next = settle();
    if (done()) return true;
    if (next == never) return false;
    // A timer said due now but did not fire (its clock's rounding): a nanosecond on.
    const ns to = std::max(next, time_.now() + ns{1});
    if (to > until) {
      time_.advance_to(until);
      settle();
      return done();
    }
    time_.advance_to(to);
    ++steps_;
  }
}

bool world::run_until_idle(ns until) {
  for (;;) {
    const ns next = settle();
    if (next == never) return true;
    if (next > until) {
      time_.advance_to(until);
      settle();
      return false;
    }
    time_.advance_to(std::max(next, time_.now() + ns{1}));
    ++steps_;
  }
}

}  // namespace sim
