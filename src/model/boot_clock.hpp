#pragma once
// The clock of every lease deadline. std::chrono::steady_clock is CLOCK_MONOTONIC, which stops
// while the machine is suspended: after a resume a holder would still believe in a lease that
// expired (in real time) during the suspend, while other machines took the lock over.
// CLOCK_BOOTTIME is just as monotonic but keeps counting through a suspend.
#include <boost/asio/basic_waitable_timer.hpp>
#include <algorithm>
#include <chrono>

namespace mongolock::detail {

struct boot_clock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<boot_clock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept;
  // Tests only: from now on, now() runs `d` ahead, as if the machine had been suspended for `d`
  // (CLOCK_MONOTONIC, and so every steady_clock timer, did not see that time pass).
  static void simulate_suspend(duration d) noexcept;
};

// The same instant as a steady_clock time point, for timers and call deadlines that use it.
inline std::chrono::steady_clock::time_point to_steady(boot_clock::time_point t) {
  return std::chrono::steady_clock::now() + (t - boot_clock::now());
}

// Asio's reactor sleeps on CLOCK_MONOTONIC, so a timer on boot_clock alone would still oversleep
// a suspend. Each wait is capped: the timer re-reads boot_clock at least once a second, and so
// fires at most about a second after a resume that carried it past its expiry.
struct boot_wait_traits {
  static constexpr std::chrono::seconds max_wait{1};
  static boot_clock::duration to_wait_duration(const boot_clock::duration& d) {
    return std::min<boot_clock::duration>(d, max_wait);
  }
  static boot_clock::duration to_wait_duration(const boot_clock::time_point& t) {
    return to_wait_duration(t - boot_clock::now());
  }
};

using boot_timer = boost::asio::basic_waitable_timer<boot_clock, boot_wait_traits>;

}  // namespace mongolock::detail
