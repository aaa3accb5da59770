#pragma once
// What happened in one simulated run, in true time: every grant, release, loss and fault, as text
// lines. Their hash is the run's fingerprint (the same seed must give the same one); a failure
// prints the lines of the name it concerns.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "process_clock.hpp"

namespace sim {

class trace {
 public:
  explicit trace(const true_clock& t) : time_(t) {}
  // `who`: a process ("p3", "server", "operator"); `name`: the lock it concerns, or empty.
  void note(std::string_view who, std::string_view name, std::string_view what);
  // Details kept only for a replay (--verbose): not in the hash, so a replay's hash is the run's.
  bool detailed() const { return detailed_; }
  void set_detailed() { detailed_ = true; }
  void detail(std::string_view who, std::string_view name, std::string_view what) {
    if (detailed_) lines_.push_back({time_.now(), std::string(who), std::string(name), std::string(what)});
  }
  ns now() const { return time_.now(); }
  std::uint64_t hash() const { return hash_; }
  std::size_t size() const { return lines_.size(); }
  // The last `n` lines that concern `name`, its permits ("NAME#k") or no name (faults of the whole
  // server), oldest first;
  // every line if `name` is empty.
  std::string lines_for(std::string_view name, std::size_t n) const;

 private:
  struct line {
    ns at;
    std::string who, name, what;
  };
  const true_clock& time_;
  std::vector<line> lines_;
  std::uint64_t hash_ = 0xcbf29ce484222325ull;  // FNV-1a
  bool detailed_ = false;
};

// "12.345678901 s" of true time.
std::string seconds(ns t);

}  // namespace sim
