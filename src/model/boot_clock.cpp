#include "model/boot_clock.hpp"

#include <time.h>

#include <atomic>

namespace mongolock::detail {
namespace {
std::atomic<boot_clock::rep> simulated_suspend_ns{0};
}

boot_clock::time_point boot_clock::now() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);  // cannot fail for a valid clock id and pointer
  const auto real = std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec};
  return time_point{real + duration{simulated_suspend_ns.load(std::memory_order_relaxed)}};
}

void boot_clock::simulate_suspend(duration d) noexcept {
  simulated_suspend_ns.fetch_add(d.count(), std::memory_order_relaxed);
}

}  // namespace mongolock::detail
