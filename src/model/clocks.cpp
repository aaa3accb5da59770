#include "model/clocks.hpp"

#include <time.h>

#include <atomic>

namespace mongolock::detail {
namespace {
std::atomic<boot_clock::rep> simulated_suspend_ns{0};

std::chrono::nanoseconds read(clockid_t id) noexcept {
  timespec ts{};
  ::clock_gettime(id, &ts);  // cannot fail for a valid clock id and pointer
  return std::chrono::seconds{ts.tv_sec} + std::chrono::nanoseconds{ts.tv_nsec};
}
}  // namespace

boot_clock::time_point boot_clock::now() noexcept {
  const auto suspended = duration{simulated_suspend_ns.load(std::memory_order_relaxed)};
  if (auto* s = installed_time_source()) return time_point{s->boot() + suspended};
  return time_point{read(CLOCK_BOOTTIME) + suspended};
}

void boot_clock::simulate_suspend(duration d) noexcept {
  simulated_suspend_ns.fetch_add(d.count(), std::memory_order_relaxed);
}

steady_clock::time_point steady_clock::now() noexcept {
  if (auto* s = installed_time_source()) return time_point{s->steady()};
  return time_point{std::chrono::duration_cast<duration>(std::chrono::steady_clock::now().time_since_epoch())};
}

std::chrono::system_clock::time_point wall_clock::now() noexcept {
  if (auto* s = installed_time_source())
    return std::chrono::system_clock::time_point{std::chrono::duration_cast<std::chrono::system_clock::duration>(s->wall())};
  return std::chrono::system_clock::now();
}

}  // namespace mongolock::detail
