#include "trace.hpp"

#include <cstdio>

namespace sim {

std::string seconds(ns t) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%lld.%09lld s", static_cast<long long>(t.count() / 1'000'000'000),
                static_cast<long long>(t.count() % 1'000'000'000));
  return buf;
}

void trace::note(std::string_view who, std::string_view name, std::string_view what) {
  const auto mix = [this](std::string_view s) {
    for (const unsigned char c : s) hash_ = (hash_ ^ c) * 0x100000001b3ull;
    hash_ = (hash_ ^ 0xff) * 0x100000001b3ull;  // a separator no text contains
  };
  const auto at = time_.now();
  mix(std::to_string(at.count()));
  mix(who);
  mix(name);
  mix(what);
  lines_.push_back({at, std::string(who), std::string(name), std::string(what)});
}

std::string trace::lines_for(std::string_view name, std::size_t n) const {
  // A multi-lock's "a+b": its own lines and each member's.
  std::vector<std::string> names{std::string(name)};
  for (std::size_t at = 0, plus; (plus = name.find('+', at)) != std::string_view::npos; at = plus + 1) {
    names.emplace_back(name.substr(at, plus - at));
    if (name.find('+', plus + 1) == std::string_view::npos) names.emplace_back(name.substr(plus + 1));
  }
  const auto concerns = [&](const std::string& of) {
    if (name.empty() || of.empty()) return true;
    for (const auto& n : names)
      if (of == n || of.starts_with(n + "#")) return true;
    return false;
  };
  std::vector<const line*> picked;
  for (auto it = lines_.rbegin(); it != lines_.rend() && picked.size() < n; ++it)
    if (concerns(it->name)) picked.push_back(&*it);
  std::string out;
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
    const line& l = **it;
    out += "  " + seconds(l.at) + "  " + l.who + (l.name.empty() ? "" : "  " + l.name) + "  " + l.what + "\n";
  }
  return out;
}

}  // namespace sim
