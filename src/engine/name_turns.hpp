#pragma once
// Coalesced waiting (docs/design.md section 7). Of the waiting acquires of one lock name in one
// provider, one at a time has the turn: it alone reads, backs off and takes. The others are parked
// here in arrival order, as a handler and a few fields: no coroutine frame, no timer (unless they
// have a deadline), no reads. The turn passes when the acquire that has it fails, or when the lease
// it won ends (after that lease's release has been answered, so the next acquire can swap against
// the document the release left, in one round trip).
//
// Tries (async_try_acquire, async_acquire_for(0)) never park: they look once, as before. A
// multi-lock's first look (acquire_mode::try_taking_turn) takes the turn if it is free and is busy
// at once if not; the turn it took goes on as a wait's does.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/clocks.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

class poll_group;

struct provider_impl;

// A place in the lock's line taken for a parked acquire by its own provider's hand-off to
// another process (release.cpp): the acquire starts in line, with this owner id.
struct line_enrollment {
  std::string owner;
  std::int64_t ticket = 0;
  boot_clock::time_point sent{};  // when the update that wrote the entry was sent
};

// A waiting acquire parked until its name's turn comes: what starting it later needs.
struct parked_acquire {
  using handler_type = boost::asio::any_completion_handler<void(boost::system::error_code, lease)>;
  // Moved in at construction: Boost 1.81's any_completion_handler move ASSIGNMENT recurses
  // without end (it re-wraps the handler as an lvalue); move construction is fine.
  explicit parked_acquire(handler_type h) : handler(std::move(h)) {}

  std::string name;
  std::shared_ptr<const lock_options> timing;  // null: the provider's
  bool plain = false;                           // a lock the user named (lock.hpp)
  diagnostics* diag = nullptr;
  detail::steady_clock::time_point since;  // when the caller asked (waits are counted from it)
  std::optional<detail::steady_clock::time_point> deadline;
  handler_type handler;
  boost::asio::cancellation_slot slot;
  std::unique_ptr<detail::steady_timer> timer;  // only with a deadline
  // Set by a cancellation that arrives after the turn was handed over but before the acquire
  // started: the start completes it as cancelled instead.
  std::atomic<bool> cancelled{false};
  // Set (before its turn is passed to it) when a hand-off put it in the line.
  std::optional<line_enrollment> enrolled;
  // The poll group of the acquire it belongs to (a semaphore's or writer's permit wait): when its
  // turn comes it polls with that acquire's other waits (docs/design.md section 10).
  std::shared_ptr<poll_group> group;
};

class name_turns {
 public:
  // True: the caller has the turn now (nothing is kept). False: `w` is parked behind the acquire
  // that has it; `on_park` ran first, under the lock, so nothing can pass the turn to `w` (or
  // remove it) before `w` is fully set up (its cancellation slot, its timer).
  template <class OnPark>
  bool enter(const std::string& name, const std::shared_ptr<parked_acquire>& w, OnPark&& on_park) {
    std::lock_guard g(mu_);
    auto [it, fresh] = taken_.try_emplace(name);
    if (fresh) return true;
    on_park();
    it->second.queue.push_back(w);
    return false;
  }
  // True: the caller has the turn now. False: another acquire has it (nothing is kept).
  bool take_if_free(const std::string& name) {
    std::lock_guard g(mu_);
    return taken_.try_emplace(name).second;
  }
  // The acquire that had the turn is done with it: returns the next parked acquire (which now has
  // the turn), or null when none waits (the turn is then free, unless `free_if_none` is false:
  // the caller keeps it).
  std::shared_ptr<parked_acquire> pass(const std::string& name, bool free_if_none = true);
  // The first parked acquire of `name`, left in the queue (its deadline and cancellation keep
  // working); null if none.
  std::shared_ptr<parked_acquire> first(const std::string& name) const;
  // Takes `w` out of the queue; false if it was not parked (its turn came, or it was removed).
  bool remove(const std::shared_ptr<parked_acquire>& w);
  // Every parked acquire, taken out (a provider closing completes them).
  std::vector<std::shared_ptr<parked_acquire>> drain();
  // The parked acquires of `name` without a deadline, taken out; the turn stays with its holder.
  std::vector<std::shared_ptr<parked_acquire>> drain_unbounded(const std::string& name);

 private:
  struct turn {
    std::deque<std::shared_ptr<parked_acquire>> queue;
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, turn> taken_;  // a name is here while an acquire has its turn
};

// Completes a parked acquire that never started with `ec` (its reason in the caller's
// diagnostics), on the handler's executor (`fallback` if it has none).
void finish_parked(const std::shared_ptr<parked_acquire>& w, boost::system::error_code ec, std::string why,
                   const boost::asio::any_io_executor& fallback);

}  // namespace mongolock::detail
