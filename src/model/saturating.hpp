#pragma once
// a - b for the informational wall-clock fields of a lock document (renewed_at, acquired_at),
// which anything may have written: INT64_MIN or INT64_MAX must not overflow, so the result
// saturates at the int64 range (found by fuzz/lock_doc_fuzz.cpp).
#include <cstdint>
#include <limits>

namespace mongolock::detail {

inline std::int64_t saturating_sub(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

}  // namespace mongolock::detail
