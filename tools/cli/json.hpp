#pragma once
// One lock_info as a single-line JSON object (the `status` and `list` output format).
#include <cstdio>
#include <ctime>
#include <string>

#include "mongolock/provider.hpp"

namespace mongolock::cli {

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += static_cast<char>(c);  // names are validated UTF-8: pass through
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
// timestamp, so no trustworthy "expires at" exists (see README, "How expiry works").
inline std::string to_json(const lock_info& i) {
  std::string out = "{\"name\":" + json_string(i.name) + ",\"held\":" + (i.held ? "true" : "false") +
                    ",\"owner\":" + (i.held ? json_string(i.owner) : "null") +
                    ",\"fencing_token\":" + std::to_string(i.fencing_token) + ",\"expires_in_ms\":null" +
                    ",\"acquired_at\":" + (i.held && i.acquired_at_ms ? json_string(iso8601(i.acquired_at_ms)) : "null") +
                    ",\"ttl_ms\":" + std::to_string(i.expiry.count()) + ",\"heartbeat\":" + std::to_string(i.heartbeat) + "}";
  return out;
}

}  // namespace mongolock::cli
