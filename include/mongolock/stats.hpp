#pragma once
// A cheap, copyable snapshot of a provider's counters (relaxed atomics underneath).
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
  std::uint64_t losses = 0;            // leases lost (expired locally or taken over)
  std::uint64_t releases = 0;          // leases released by their owner
  std::uint64_t server_calls = 0;      // driver calls sent to the server (reads, swaps, renewals...)
};

}  // namespace mongolock
