#pragma once
// The simulation's time (docs/design.md section 11, "Virtual time"): one true clock no process can
// read, and each simulated process's clocks on it, which the library reads through its time
// source seam (src/model/time_source.hpp) while that process's handlers run.
#include <chrono>
#include <cstdint>

#include "model/time_source.hpp"

namespace sim {

using ns = std::chrono::nanoseconds;
inline constexpr ns never = ns::max();

// True time: the oracles' clock, moved on by the world only (from 0 at the simulation's start).
class true_clock {
 public:
  ns now() const { return now_; }
  void advance_to(ns t) {
    if (t > now_) now_ = t;
  }

 private:
  ns now_{0};
};

// One process's clocks. Its boot clock runs `rate_ppm` parts per million fast (negative: slow) of
// true time, from `boot_at_start`; its steady clock is the boot clock less the time this process
// spent suspended; its wall clock runs with the boot clock from `wall_at_start` (time since 1970),
// as a host's clocks share one oscillator.
class process_clock final : public mongolock::detail::time_source {
 public:
  process_clock(const true_clock& t, std::int64_t rate_ppm, ns boot_at_start, ns wall_at_start);

  ns boot() noexcept override;
  ns steady() noexcept override;
  ns wall() noexcept override;
  void due_in(ns in) noexcept override;

  // The earliest true time a timer of this process said it falls due since forget_due(), or
  // `never`. A cancelled timer may have said so too: the world then only looks once more.
  ns next_due() const { return next_due_; }
  void forget_due() { next_due_ = never; }

  // The process was frozen for `d` of its own time: its boot clock counted it, its steady clock
  // did not (a suspend; a SIGSTOP freezes both and needs nothing here).
  void suspended_for(ns d) { suspended_ += d; }

  // The true time at which this process's clock has moved `local` on from now (rounded up).
  ns true_after(ns local) const;
  // How far this process's clocks move in `d` of true time (at most a nanosecond more).
  ns local_length_of(ns d) const { return d + ns{d.count() / 1'000'000 * rate_ppm_ + 1}; }

 private:
  ns local_elapsed() const;

  const true_clock& true_;
  std::int64_t rate_ppm_;
  ns true_at_start_, boot_at_start_, wall_at_start_, suspended_{0};
  ns next_due_ = never;
};

}  // namespace sim
