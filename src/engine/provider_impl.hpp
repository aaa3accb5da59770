#pragma once
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/strand.hpp>
#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/store_ops.hpp"
#include "store/lock_store.hpp"
#include "engine/name_turns.hpp"
#include "engine/renewal_batch.hpp"
#include "mongolock/options.hpp"
#include "mongolock/stats.hpp"

namespace mongolock::detail {

struct lease_state;

// 128 bits from getrandom(2), as 32 lowercase hex characters.
std::string new_owner_id();
// This process as a lock holder: gethostname(2), getpid(2) and the client's label.
holder_meta this_process(std::string label);

struct provider_impl : std::enable_shared_from_this<provider_impl> {
  // `ex`: where the provider's own operations run (each on a strand of it).
  provider_impl(boost::asio::any_io_executor e, std::shared_ptr<lock_store> s, lock_options o, log_function l,
                log_level threshold = log_level::info)
      : ex(std::move(e)),
        store(std::move(s)),
        opts(o),
        log_fn(std::move(l)),
        log_threshold(threshold),
        renewals(std::make_shared<renewal_batch>(ex, store)),
        seed(std::random_device{}()) {}

  // Fire-and-forget release (destructor path, abandoned or ambiguous acquisitions). The owner
  // filter makes it harmless if the lock has moved on. While the server is unreachable it retries
  // (after 0.25, 1 and 4 s): a lock granted to a call whose reply was lost is freed as soon as the
  // server is back, not only at expiry.
  // `after`: wait this long first (a lease lost by its watchdog frees the lock 2 x margin later).
  // `unconfirmed`: a take whose outcome is unknown may still land after a release that matched
  // nothing, so keep releasing on the same ladder (0.25, 1, 4 s) until one frees it.
  void release_in_background(std::string name, std::string owner, std::int64_t token,
                             std::chrono::milliseconds after = std::chrono::milliseconds{0}, bool unconfirmed = false,
                             int attempt = 0);

  // `text()` builds the line only if someone listens at that level.
  template <class Text>
  void log(log_level level, Text&& text) const {
    if (log_fn && level >= log_threshold) log_fn(level, std::forward<Text>(text)());
  }
  std::uint64_t next_seed() {
    std::lock_guard g(mu);
    return seed();
  }

  // Registers a granted lease; false once the provider is closing (the caller gives it back), so
  // that no lease slips past close().
  bool add_live(const std::string& owner, const std::shared_ptr<lease_state>& s) {
    std::lock_guard g(mu);
    if (closing_) return false;
    live[owner] = s;
    return true;
  }
  void remove_live(const std::string& owner) {
    std::lock_guard g(mu);
    live.erase(owner);
  }
  std::vector<std::shared_ptr<lease_state>> live_leases() {
    std::lock_guard g(mu);
    std::vector<std::shared_ptr<lease_state>> out;
    for (auto& [_, w] : live)
      if (auto s = w.lock()) out.push_back(std::move(s));
    return out;
  }

  // Shutdown (provider::async_shutdown). Work that must finish before a clean exit (an acquire in
  // flight, the watcher of a take whose acquire was abandoned, a release in the background)
  // holds a ticket; the provider is idle when no ticket is left.
  using ticket = std::shared_ptr<void>;
  ticket begin_work();
  // Calls `f` once no ticket is left: at once (inline) if none is.
  void when_idle(std::function<void()> f);
  // From now on acquisitions are refused; runs every registered canceller and returns the live
  // leases (the caller ends and releases them).
  std::vector<std::shared_ptr<lease_state>> close();
  // Lock-free: every waiting acquire asks on every turn.
  bool closing() const { return closing_; }
  // A waiting acquisition registers how to wake it; close() calls it. Returns a handle for forget.
  std::uint64_t on_close(std::function<void()> cancel);
  void forget_on_close(std::uint64_t id);
  // A background release that gave up (the lock then expires on its own): shutdown reports it.
  struct noted_failure {
    boost::system::error_code ec;
    std::string why;
  };
  void note_failure(boost::system::error_code ec, std::string why);
  noted_failure failure() const {
    std::lock_guard g(mu);
    return failure_;
  }

  // What this provider last left behind when it released a lock: the free document, exactly as
  // the server now has it unless someone else moved on. The next acquire of that name tries its
  // compare-and-swap against this instead of reading first; if it is stale the swap matches
  // nothing and the acquire falls back to reading. Bounded: forgotten wholesale when full.
  void remember_free(const std::string& name, const lock_doc& doc) {
    std::lock_guard g(mu);
    if (free_docs.size() >= 4096) free_docs.clear();
    free_docs[name] = doc;
  }
  std::optional<lock_doc> recall_free(const std::string& name) {
    std::lock_guard g(mu);
    auto it = free_docs.find(name);
    if (it == free_docs.end()) return std::nullopt;
    auto doc = it->second;
    free_docs.erase(it);
    return doc;
  }

  // Names this provider has seen declared a plain lock's: their acquires skip the declaration.
  // Bounded: forgotten wholesale when full (a forgotten name costs one more declare).
  bool declared_plain(const std::string& name) const {
    std::lock_guard g(mu);
    return plain_names.contains(name);
  }
  void note_declared_plain(const std::string& name) {
    std::lock_guard g(mu);
    if (plain_names.size() >= 4096) plain_names.clear();
    plain_names.insert(name);
  }

  struct counters {
    std::atomic<std::uint64_t> acquisitions{0}, failed_attempts{0}, busy_observations{0},
        wait_ns{0}, renewals{0}, renewal_errors{0}, losses{0}, releases{0}, server_calls{0}, acquiring{0};
    std::array<std::atomic<std::uint64_t>, stats::wait_bucket_bounds.size() + 1> wait_buckets{};
  };
  // A successful acquire that took `waited`: the sum and its histogram bucket.
  void count_wait(std::chrono::nanoseconds waited);
  stats snapshot() const;

  const boost::asio::any_io_executor ex;
  const std::shared_ptr<lock_store> store;
  const lock_options opts;
  holder_meta meta;  // this process, written into each lock it takes (set once, before any use)
  const log_function log_fn;
  const log_level log_threshold;
  std::atomic<bool> prepared{false};
  counters count;
  // The store's operations, one typed call each (store_ops.hpp); counted in count.server_calls.
  store_ops ops{ex, store, count.server_calls};
  // Every lease of this provider renews through it: one command per tick (renewal_batch.hpp).
  const std::shared_ptr<renewal_batch> renewals;
  // Which waiting acquire of each lock name talks to the server; the others park (name_turns.hpp).
  name_turns turns;

 private:
  void end_work();

  mutable std::mutex mu;
  std::atomic<bool> closing_{false};  // written under mu
  std::size_t working_ = 0;
  std::vector<std::function<void()>> idle_waiters_;
  std::uint64_t next_canceller_ = 0;
  std::unordered_map<std::uint64_t, std::function<void()>> cancellers_;
  noted_failure failure_;
  std::mt19937_64 seed;
  std::unordered_map<std::string, std::weak_ptr<lease_state>> live;
  std::unordered_map<std::string, lock_doc> free_docs;
  std::unordered_set<std::string> plain_names;
};

}  // namespace mongolock::detail
