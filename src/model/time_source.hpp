#pragma once
// The one seam through which the library reads the time and waits for it (docs/design.md section
// 11, "Virtual time"). Every clock of src/ (boot_clock, steady_clock and wall_clock in
// model/clocks.hpp) and every timer on them asks the time source installed on the calling thread,
// and reads the machine's clocks when there is none, as in every process outside a simulation.
// A simulation (test/sim/) runs each simulated process's io_context on one thread with that
// process's time source installed, so the process's handlers, and the timers its reactor checks,
// see its own clocks; and the timers report when they fall due, so the simulation can jump to the
// next event instead of sleeping.
#include <chrono>

#include "model/installed.hpp"

namespace mongolock::detail {

class time_source {
 public:
  time_source() = default;
  time_source(const time_source&) = delete;
  time_source& operator=(const time_source&) = delete;

  // The process's boot clock (counts through a suspend), its monotonic clock, and its wall clock
  // (time since 1970, which may jump).
  virtual std::chrono::nanoseconds boot() noexcept = 0;
  virtual std::chrono::nanoseconds steady() noexcept = 0;
  virtual std::chrono::nanoseconds wall() noexcept = 0;
  // A timer of this thread falls due `in` from now (Asio's reactor asks each clock's wait traits
  // each time it arms its wake-up for the earliest timer; a cancelled timer may still be named).
  virtual void due_in(std::chrono::nanoseconds in) noexcept = 0;

 protected:
  ~time_source() = default;
};

// The time source installed on this thread, or null: the machine's clocks.
inline time_source* installed_time_source() noexcept { return installed<time_source>::get(); }
// Installs a time source on this thread for the scope's life.
using time_source_scope = installed<time_source>::scope;

}  // namespace mongolock::detail
