#include "process_clock.hpp"

#include <algorithm>

namespace sim {

namespace {
constexpr std::int64_t million = 1'000'000;
__extension__ typedef __int128 wide;  // GCC's and Clang's; -Wpedantic asks for the marker

// Rounded down, for either sign (C++ division rounds toward zero).
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const auto q = a / b;
  return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q;
}

// The local length of `e` of true time at `rate_ppm`: e + floor(e * rate_ppm / 10^6), exact in
// int64 for every e that int64 nanoseconds hold and a rate error within 10 % (the product is
// split so that it never overflows).
ns local_length(ns e, std::int64_t rate_ppm) {
  const auto n = e.count();
  return ns{n + n / million * rate_ppm + floor_div(n % million * rate_ppm, million)};
}

// Timers further out than this are never due in a simulation (a timer at time_point::max).
constexpr ns far_future = std::chrono::hours{24 * 365 * 100};
}  // namespace

process_clock::process_clock(const true_clock& t, std::int64_t rate_ppm, ns boot_at_start, ns wall_at_start)
    : true_(t), rate_ppm_(rate_ppm), true_at_start_(t.now()), boot_at_start_(boot_at_start), wall_at_start_(wall_at_start) {}

ns process_clock::local_elapsed() const { return local_length(true_.now() - true_at_start_, rate_ppm_); }

ns process_clock::boot() noexcept { return boot_at_start_ + local_elapsed(); }
ns process_clock::steady() noexcept { return boot_at_start_ + local_elapsed() - suspended_; }
ns process_clock::wall() noexcept { return wall_at_start_ + local_elapsed(); }

ns process_clock::true_after(ns local) const {
  if (local <= ns{0}) return true_.now();
  if (local > far_future) return never;
  // local_length(e) = floor(e * (10^6 + rate) / 10^6), so the smallest e at which it reaches
  // `target` is ceil(target * 10^6 / (10^6 + rate)), exactly, in 128 bits.
  const auto since = true_.now() - true_at_start_;
  const wide target = static_cast<wide>(local_length(since, rate_ppm_).count()) + local.count();
  const wide k = million + rate_ppm_;
  const wide e = (target * million + k - 1) / k;
  return true_at_start_ + ns{static_cast<std::int64_t>(e)};
}

void process_clock::due_in(ns in) noexcept { next_due_ = std::min(next_due_, true_after(in)); }

}  // namespace sim
