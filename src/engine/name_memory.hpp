#pragma once
// What a provider remembers of lock names between operations, to save a round trip each
// (docs/design.md section 7): the free document its own last release left, and the names it has
// seen declared a plain lock's. Both bounded, forgotten wholesale when full: what is forgotten
// costs one more read or declare, never a wrong answer.
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "model/lock_document.hpp"

namespace mongolock::detail {

class name_memory {
 public:
  static constexpr std::size_t capacity = 4096;

  // The free document, exactly as the server now has it unless someone else moved on. The next
  // acquire of that name tries its compare-and-swap against it instead of reading first; if it is
  // stale the swap matches nothing and the acquire falls back to reading.
  void remember_free(const std::string& name, const lock_doc& doc) {
    std::lock_guard g(mu_);
    if (free_docs_.size() >= capacity) free_docs_.clear();
    free_docs_[name] = doc;
  }
  // Taken out: each remembered document serves one acquire.
  std::optional<lock_doc> recall_free(const std::string& name) {
    std::lock_guard g(mu_);
    auto it = free_docs_.find(name);
    if (it == free_docs_.end()) return std::nullopt;
    auto doc = it->second;
    free_docs_.erase(it);
    return doc;
  }

  // Names seen declared a plain lock's: their acquires skip the declaration.
  bool declared_plain(const std::string& name) const {
    std::lock_guard g(mu_);
    return plain_names_.contains(name);
  }
  void note_declared_plain(const std::string& name) {
    std::lock_guard g(mu_);
    if (plain_names_.size() >= capacity) plain_names_.clear();
    plain_names_.insert(name);
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, lock_doc> free_docs_;
  std::unordered_set<std::string> plain_names_;
};

}  // namespace mongolock::detail
