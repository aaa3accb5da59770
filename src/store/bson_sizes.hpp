#pragma once
// What a command built from a caller's list weighs in BSON, known before it is built (docs/design.md
// section 14, "Every command within the server's limits"). MongoDB refuses a document over the
// server's maxBsonObjectSize (16 MiB on every version this library supports; hello says), and
// libmongoc refuses such a statement before sending it, so a list that can grow with what the
// caller holds goes out in parts that each stay under it.
#include <cstddef>
#include <utility>
#include <vector>

#include "model/lock_document.hpp"

namespace mongolock::detail {

// What a part leaves of maxBsonObjectSize for the rest of its command: the filter's keys, the
// update, the command's own fields (collection, writeConcern, lsid, $clusterTime, txnNumber),
// none of which grows with the list.
inline constexpr std::size_t command_reserve_bytes = 16 * 1024;

// One string at `index` of a BSON array: its type byte, the index as a decimal key and that key's
// NUL, the string's int32 length, its bytes and its NUL.
constexpr std::size_t array_string_bytes(std::size_t index, std::size_t length) {
  std::size_t digits = 1;
  for (std::size_t i = index; i >= 10; i /= 10) ++digits;
  return 1 + digits + 1 + 4 + length + 1;
}

// [0, count) as consecutive parts [first, last) whose elements weigh at most `budget` bytes in
// all, `weight(i, k)` being element i's weight as the k-th of its part (its array index there).
// One part if everything fits; an element heavier than `budget` alone still gets a part of its
// own (the server then refuses that part only).
template <class Weight>
std::vector<std::pair<std::size_t, std::size_t>> split_by_bytes(std::size_t count, std::size_t budget,
                                                                  Weight weight) {
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  std::size_t first = 0, used = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t w = weight(i, i - first);
    if (i > first && used + w > budget) {
      parts.emplace_back(first, i);
      first = i;
      used = weight(i, 0);
    } else {
      used += w;
    }
  }
  if (count > 0) parts.emplace_back(first, count);
  return parts;
}

}  // namespace mongolock::detail
