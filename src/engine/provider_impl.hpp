#pragma once
// The state one provider shares among its locks and leases: the store and its typed calls, the
// options, the renewal batch, the turns of names, its life (provider_life.hpp), background releases
// and the counters behind stats. It remembers nothing of lock names between operations: a free
// lock is taken without a read whoever freed it (docs/design.md section 1).
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
#include <vector>

#include "engine/provider_life.hpp"
#include "engine/store_ops.hpp"
#include "store/lock_store.hpp"
#include "engine/name_turns.hpp"
#include "engine/group_commit.hpp"
#include "engine/renewal_batch.hpp"
#include "engine/splitting_store.hpp"
#include "mongolock/options.hpp"
#include "mongolock/stats.hpp"

namespace mongolock::detail {

struct lease_state;
struct client_impl;

// 128 bits from getrandom(2) (model/random_source.hpp), as 32 lowercase hex characters.
std::string new_owner_id();
// 64 bits from the same source: the seed of a provider's jitter.
std::uint64_t new_seed();
// This process as a lock holder: gethostname(2), getpid(2) and the client's label.
holder_meta this_process(std::string label);

// A background release's retries (docs/design.md section 4, "Give-back"): after 0.25, 1 and 4 s,
// each counted from the reply before it. Shutdown waits for a ladder on a healthy server, however
// short the lease (section 4, "Shutdown"), allowing `give_back_last_reply` for a reply.
inline constexpr std::array<std::chrono::milliseconds, 3> give_back_retries{
    std::chrono::milliseconds(250), std::chrono::milliseconds(1000), std::chrono::milliseconds(4000)};
inline constexpr std::chrono::milliseconds give_back_last_reply{1000};
// How long a ladder's retries from `step` on, and a reply, may still take.
constexpr std::chrono::milliseconds give_back_left(std::size_t step) {
  auto left = give_back_last_reply;
  for (auto i = step; i < give_back_retries.size(); ++i) left += give_back_retries[i];
  return left;
}

struct provider_impl : std::enable_shared_from_this<provider_impl> {
  // `ex`: where the provider's own operations run (each on a strand of it).
  provider_impl(boost::asio::any_io_executor e, std::shared_ptr<lock_store> s, lock_options o, log_function l,
                log_level threshold = log_level::info)
      : ex(std::move(e)),
        // Group commit over the split of long lists (splitting_store.hpp) over the store.
        splitter(std::make_shared<splitting_store>(std::move(s))),
        grouped(std::make_shared<grouping_store>(splitter)),
        store(grouped),
        opts(o),
        log_fn(std::move(l)),
        log_threshold(threshold),
        renewals(std::make_shared<renewal_batch>(ex, store)),
        seed(new_seed()) {}

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
    std::lock_guard g(seed_mu);
    return seed();
  }

  // Shutdown (provider::async_shutdown): a ticket for work that must finish before a clean exit
  // (`life` counts it; the provider is idle when no ticket is left).
  using ticket = std::shared_ptr<void>;
  ticket begin_work();
  // From now on acquisitions are refused: wakes every waiting acquire, completes every parked
  // one, and returns the live leases (the caller ends and releases them).
  std::vector<std::shared_ptr<lease_state>> close();
  bool closing() const { return life.closing(); }

  struct counters {
    std::atomic<std::uint64_t> acquisitions{0}, failed_attempts{0}, busy_observations{0},
        wait_ns{0}, renewals{0}, renewal_errors{0}, losses{0}, losses_at_deadline{0}, losses_taken_over{0},
        releases{0}, server_calls{0}, acquiring{0};
    std::array<std::atomic<std::uint64_t>, stats::wait_bucket_bounds.size() + 1> wait_buckets{};
  };
  // A successful acquire that took `waited`: the sum and its histogram bucket.
  void count_wait(std::chrono::nanoseconds waited);
  stats snapshot() const;

  const boost::asio::any_io_executor ex;
  // A list that grows with the caller goes in parts the server takes (splitting_store.hpp).
  const std::shared_ptr<splitting_store> splitter;
  // Takes and releases ready together share a command (group_commit.hpp); `store` is this store.
  const std::shared_ptr<grouping_store> grouped;
  const std::shared_ptr<lock_store> store;
  const lock_options opts;
  // The client of a provider on a server (null on the engine tests' in-memory store): a lease's
  // fenced writes go through it (fence.hpp). Set once, before any use.
  std::shared_ptr<client_impl> client;
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
  // Work in flight, shutdown, live leases (provider_life.hpp).
  provider_life life;
  // Owner ids of acquires that ended without a lease and whose leave found no entry, with their
  // names, waiting to be freed together (acquire.cpp, free_abandoned_owner).
  struct abandoned_owners {
    std::mutex mu;
    std::vector<std::string> names, owners;
  } abandoned;

 private:
  std::mutex seed_mu;
  std::mt19937_64 seed;
};

}  // namespace mongolock::detail
