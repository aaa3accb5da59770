#pragma once
// Every bound the library enforces, in one place. Durations: validate() refuses larger values with
// errc::invalid_options, so that deadline arithmetic can never overflow and every timeout fits the
// driver's 32-bit millisecond fields. Sizes: refused with errc::invalid_name or invalid_options.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace mongolock::limits {

inline constexpr std::chrono::milliseconds min_expiry{100};
inline constexpr std::chrono::milliseconds max_expiry = std::chrono::hours(24);
inline constexpr std::chrono::milliseconds max_timeout = std::chrono::hours(24);  // selection, socket, write
inline constexpr std::chrono::milliseconds max_acquire_timeout = std::chrono::hours(24 * 366);
inline constexpr std::chrono::milliseconds max_backoff = std::chrono::hours(1);
inline constexpr std::chrono::seconds max_idle_cleanup = std::chrono::hours(24 * 3660);  // ~10 years

inline constexpr std::size_t max_name_bytes = 512;          // a lock name, UTF-8
inline constexpr std::size_t max_multi_lock_names = 64;     // names of one multi_lock
inline constexpr int max_permits = 64;                      // permits of a semaphore, readers of a rw_lock
inline constexpr std::size_t max_election_value = 4096;     // bytes of UTF-8

// The largest fencing token a fenced write accepts: the largest int64, the last token a take can
// write. Past the token clock's cap (year 2189) a lock's tokens count on by one, and those must
// fence as every other does (docs/design.md sections 1 and 15).
inline constexpr std::int64_t max_fencing_token = std::numeric_limits<std::int64_t>::max();

}  // namespace mongolock::limits
