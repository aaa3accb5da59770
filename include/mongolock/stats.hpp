#pragma once
// A cheap, copyable snapshot of a provider's counters (relaxed atomics underneath).
#include <array>
#include <chrono>
#include <cstdint>

namespace mongolock {

struct stats {
  std::uint64_t acquisitions = 0;      // successful acquires
  std::uint64_t failed_attempts = 0;   // compare-and-swaps lost to another owner
  std::uint64_t busy_observations = 0; // reads that found the lock held (waiting)
  std::chrono::nanoseconds wait_time{0};  // summed time from acquire start to success
  std::uint64_t renewals = 0;          // successful renewals
  std::uint64_t renewal_errors = 0;    // renewal calls that failed and were retried
  std::uint64_t losses = 0;            // leases lost (expired locally or taken over): the two below
  std::uint64_t losses_at_deadline = 0;  // of losses: no renewal succeeded before the local deadline
  std::uint64_t losses_taken_over = 0;   // of losses: a renewal found another owner (or a force release)
  std::uint64_t releases = 0;          // leases released by their owner
  std::uint64_t server_calls = 0;      // commands sent to the server (reads, swaps, renewals...; a grouped command once)

  // Gauges: the moment of the snapshot.
  std::uint64_t leases_held = 0;           // leases of this provider held now
  std::uint64_t acquires_in_progress = 0;  // acquire operations started and not completed (waiters)

  // Successful acquires by time from start to grant, in buckets up to each bound; the last
  // bucket counts the rest.
  static constexpr std::array<std::chrono::milliseconds, 5> wait_bucket_bounds{
      std::chrono::milliseconds{1}, std::chrono::milliseconds{10}, std::chrono::milliseconds{100},
      std::chrono::milliseconds{1000}, std::chrono::milliseconds{10000}};
  std::array<std::uint64_t, wait_bucket_bounds.size() + 1> wait_histogram{};

  // Renewal commands by round trip, answered or failed (one command renews every lease of the
  // provider due at that tick), bucketed as the wait histogram.
  std::chrono::nanoseconds renewal_time{0};  // summed round trips
  static constexpr std::array<std::chrono::milliseconds, 7> renewal_bucket_bounds{
      std::chrono::milliseconds{1},   std::chrono::milliseconds{5},    std::chrono::milliseconds{25},
      std::chrono::milliseconds{100}, std::chrono::milliseconds{500},  std::chrono::milliseconds{2500},
      std::chrono::milliseconds{10000}};
  std::array<std::uint64_t, renewal_bucket_bounds.size() + 1> renewal_histogram{};
};

}  // namespace mongolock
