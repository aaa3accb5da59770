#pragma once
// Small measurement helpers: percentiles, a monotonic timestamp shared by processes on one
// machine (CLOCK_MONOTONIC), resident memory, and a minimal JSON writer.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace bench {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto idx = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(idx, v.size() - 1)];
}

// Resident set size in KiB, from /proc/self/status (VmRSS).
inline long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

// One flat JSON object per scenario row: {"scenario":..., "k": v, ...}.
struct row {
  explicit row(std::string name) : scenario(std::move(name)) {}
  std::string scenario;
  std::vector<std::pair<std::string, std::string>> fields;
  // A ratio to a reference that measured nothing (0 cycles) is not a number: null, which JSON has.
  row& num(const std::string& k, double v) {
    if (!std::isfinite(v)) {
      fields.emplace_back(k, "null");
      return *this;
    }
    std::ostringstream s;
    s << v;
    fields.emplace_back(k, s.str());
    return *this;
  }
  row& str(const std::string& k, const std::string& v) {
    fields.emplace_back(k, "\"" + v + "\"");
    return *this;
  }
  std::string json() const {
    std::string out = "{\"scenario\":\"" + scenario + "\"";
    for (auto& [k, v] : fields) out += ",\"" + k + "\":" + v;
    return out + "}";
  }
};

}  // namespace bench
