#include "holder_text.hpp"

#include <algorithm>
#include <chrono>

#include "model/lock_document.hpp"
#include "model/saturating.hpp"

namespace mongolock::cli {

namespace {

// Never negative: a holder's clock ahead of ours reads as "renewed 0 ms ago".
std::int64_t silent_ms(const lock_info& info, std::int64_t now_ms) {
  return std::max<std::int64_t>(0, detail::saturating_sub(now_ms, info.renewed_at_ms));
}

}  // namespace

std::int64_t wall_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

bool force_released(const lock_info& info) { return info.owner == detail::broken_owner; }

std::string printable(std::string s) {
  for (auto& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

std::string held_by(const lock_info& info, std::int64_t now_ms) {
  if (force_released(info))
    return "was force-released, and its former holder's lease is not yet waited out";
  std::string text = "is held by " + (info.owner.empty() ? std::string("an unnamed owner") : printable(info.owner));
  std::string where = "host " + (info.host.empty() ? std::string("unnamed") : printable(info.host));
  if (info.pid > 0) where += ", pid " + std::to_string(info.pid);
  if (!info.label.empty()) where += ", label " + printable(info.label);
  text += " (" + where + ")";
  if (info.renewed_at_ms > 0) text += ", renewed " + std::to_string(silent_ms(info, now_ms)) + " ms ago";
  return text;
}

std::string silence_hint(const lock_info& info, std::int64_t now_ms) {
  if (!info.held || force_released(info) || info.expiry.count() <= 0 || info.renewed_at_ms <= 0) return {};
  if (silent_ms(info, now_ms) <= info.expiry.count()) return {};
  return " (silent for longer than its ttl of " + std::to_string(info.expiry.count()) +
         " ms by the two wall clocks: it may have crashed; a waiter takes over once it has itself seen no "
         "renewal for that ttl plus its margin, and --wait 0 watches only a holder silent for over 3 x its ttl)";
}

}  // namespace mongolock::cli
