#pragma once
// One lock_info as a single-line JSON object (the `status` and `list` output format).
#include <cstdio>
#include <ctime>
#include <string>

#include "model/saturating.hpp"
#include "model/utf8.hpp"
#include "mongolock/provider.hpp"

namespace mongolock::cli {

// Names are validated UTF-8, but owner, host and label come from the document as stored, which
// anything may have written: a byte that does not start a well-formed character becomes U+FFFD,
// so the output is always valid UTF-8 and valid JSON (fuzz/lock_doc_fuzz.cpp).
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (std::size_t i = 0, n; i < s.size(); i += n) {
    n = detail::utf8_char_length(s, i);
    const auto c = static_cast<unsigned char>(s[i]);
    if (n == 0) out += "\\ufffd", n = 1;
    else if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out.append(s, i, n);
  }
  return out + "\"";
}

inline std::string iso8601(std::int64_t ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];  // generous: GCC cannot bound the int fields
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

// expires_in_ms is always null: expiry is decided by observing the holder's heartbeat, never by a
// timestamp, so no trustworthy "expires at" exists (docs/design.md section 2). The holder
// fields are null while free; holder_silent_ms is this machine's clock minus the holder's at its
// last renewal: a hint, as wrong as either clock.
inline std::string to_json(const lock_info& i, std::int64_t now_ms) {
  auto str_or_null = [&](const std::string& s) { return i.held && !s.empty() ? json_string(s) : std::string("null"); };
  const std::string holder =
      ",\"host\":" + str_or_null(i.host) + ",\"pid\":" + (i.held && i.pid ? std::to_string(i.pid) : "null") +
      ",\"label\":" + str_or_null(i.label) +
      ",\"renewed_at\":" + (i.held && i.renewed_at_ms ? json_string(iso8601(i.renewed_at_ms)) : "null") +
      ",\"holder_silent_ms\":" + (i.held && i.renewed_at_ms ? std::to_string(detail::saturating_sub(now_ms, i.renewed_at_ms)) : "null") +
      ",\"value\":" + str_or_null(i.value);  // a leader's election value (election.hpp), once proclaimed
  std::string out = "{\"name\":" + json_string(i.name) + ",\"exists\":" + (i.exists ? "true" : "false") +
                    ",\"held\":" + (i.held ? "true" : "false") +
                    ",\"owner\":" + (i.held ? json_string(i.owner) : "null") +
                    // The token as a number and, exact for readers that parse numbers as doubles
                    // (it is above 2^53), as a string; the heartbeat is compared, never counted.
                    ",\"fencing_token\":" + std::to_string(i.fencing_token) +
                    ",\"fencing_token_str\":" + json_string(std::to_string(i.fencing_token)) + ",\"expires_in_ms\":null" +
                    ",\"acquired_at\":" + (i.held && i.acquired_at_ms ? json_string(iso8601(i.acquired_at_ms)) : "null") +
                    ",\"ttl_ms\":" + std::to_string(i.expiry.count()) + ",\"heartbeat\":" + json_string(std::to_string(i.heartbeat)) +
                    // The last run recorded as completed (run --once-per), as a string like the token.
                    ",\"last_run_token_str\":" +
                    (i.last_completed_token ? json_string(std::to_string(i.last_completed_token)) : "null") + holder + "}";
  return out;
}

}  // namespace mongolock::cli
