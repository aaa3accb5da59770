#pragma once
// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), one character at a
// time: lock-name validation accepts only this, and the CLI's JSON output replaces anything else
// (a host or owner written into a lock document by something other than mongolock).
#include <cstddef>
#include <string_view>

namespace mongolock::detail {

// The length of the well-formed character starting at s[i], or 0 if none starts there.
inline std::size_t utf8_char_length(std::string_view s, std::size_t i) noexcept {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  std::size_t extra;
  char32_t cp;
  if ((c & 0xE0) == 0xC0) extra = 1, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) extra = 2, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) extra = 3, cp = c & 0x07;
  else return 0;
  if (i + extra >= s.size()) return 0;  // truncated
  for (std::size_t k = 1; k <= extra; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static constexpr char32_t min_for[] = {0, 0x80, 0x800, 0x10000};
  if (cp < min_for[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return extra + 1;
}

inline bool valid_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0, n; i < s.size(); i += n)
    if ((n = utf8_char_length(s, i)) == 0) return false;
  return true;
}

}  // namespace mongolock::detail
