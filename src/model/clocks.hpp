#pragma once
// The library's three clocks and its timers. Each clock reads the time source installed on the
// calling thread (model/time_source.hpp), or the machine's clock when there is none.
//
// boot_clock is the clock of every lease deadline. std::chrono::steady_clock is CLOCK_MONOTONIC,
// which stops while the machine is suspended: after a resume a holder would still believe in a
// lease that expired (in real time) during the suspend, while other machines took the lock over.
// CLOCK_BOOTTIME is just as monotonic but keeps counting through a suspend.
// steady_clock is CLOCK_MONOTONIC: the acquire timeouts and the calls' deadlines, which a suspend
// may rightly stretch. wall_clock is the time since 1970: the token clock and the dates written
// for people, never compared across hosts (docs/design.md section 1).
#include <boost/asio/basic_waitable_timer.hpp>
#include <algorithm>
#include <chrono>

#include "model/time_source.hpp"

namespace mongolock::detail {

// The member types a clock needs (std::chrono's Clock requirements) for `Self` in `Duration`.
template <class Self, class Duration = std::chrono::nanoseconds>
struct monotonic_clock_types {
  using duration = Duration;
  using rep = typename duration::rep;
  using period = typename duration::period;
  using time_point = std::chrono::time_point<Self, duration>;
  static constexpr bool is_steady = true;
};

struct boot_clock : monotonic_clock_types<boot_clock> {
  static time_point now() noexcept;
  // Tests only: from now on, now() runs `d` ahead, as if the machine had been suspended for `d`
  // (CLOCK_MONOTONIC, and so every steady_clock timer, did not see that time pass).
  static void simulate_suspend(duration d) noexcept;
};

struct steady_clock : monotonic_clock_types<steady_clock> {
  static time_point now() noexcept;
};

struct wall_clock {
  static std::chrono::system_clock::time_point now() noexcept;
};

// The same instant as a steady_clock time point, for timers and call deadlines that use it.
inline steady_clock::time_point to_steady(boot_clock::time_point t) {
  return steady_clock::now() + (t - boot_clock::now());
}

// How long Asio's reactor may sleep before it checks a clock's timers again. With a time source
// installed the timer tells it when it falls due and the reactor does not sleep: the simulation
// moves the clocks on (model/time_source.hpp).
template <class Clock, class Cap>
struct seam_wait_traits {
  static typename Clock::duration to_wait_duration(const typename Clock::duration& d) {
    if (auto* s = installed_time_source()) {
      s->due_in(d);
      return Clock::duration::zero();
    }
    return Cap::cap(d);
  }
  static typename Clock::duration to_wait_duration(const typename Clock::time_point& t) {
    return to_wait_duration(t - Clock::now());
  }
};

// Asio's reactor sleeps on CLOCK_MONOTONIC, so a timer on boot_clock alone would still oversleep
// a suspend. Each wait is capped: the timer re-reads boot_clock at least once a second, and so
// fires at most about a second after a resume that carried it past its expiry.
struct wait_at_most_a_second {
  static std::chrono::nanoseconds cap(std::chrono::nanoseconds d) {
    return std::min<std::chrono::nanoseconds>(d, std::chrono::seconds{1});
  }
};
struct wait_as_asked {
  static std::chrono::nanoseconds cap(std::chrono::nanoseconds d) { return d; }
};

using boot_timer = boost::asio::basic_waitable_timer<boot_clock, seam_wait_traits<boot_clock, wait_at_most_a_second>>;
using steady_timer = boost::asio::basic_waitable_timer<steady_clock, seam_wait_traits<steady_clock, wait_as_asked>>;

}  // namespace mongolock::detail
