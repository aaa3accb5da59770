#pragma once
// One held lease: its renewal loop, its watchdog and the handlers waiting for its end. Every
// member except the immutable identity fields and `phase` is touched only on `strand`.
#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <atomic>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model/clocks.hpp"
#include "sansio/lease_fsm.hpp"
#include "engine/acquire.hpp"
#include "engine/provider_impl.hpp"
#include "engine/spawn.hpp"

namespace mongolock::detail {

enum class lease_phase { held, lost, released };

struct lease_state : std::enable_shared_from_this<lease_state> {
  lease_state(std::shared_ptr<provider_impl> p, strand_type s, std::string n, std::string o,
              std::int64_t t, lease_fsm f)
      : prov(std::move(p)), strand(std::move(s)), name(std::move(n)), owner(std::move(o)), token(t),
        acquired_sent(f.acquired_sent()), fsm(f), renew_timer(strand), watchdog(strand) {}

  // On the strand: starts the renewal loop and the watchdog.
  void start();
  // On the strand: ends the lease once (lost or released), stops the loops and completes every
  // waiter (and so cancels guarded work) with `why`. The name's turn passes on at once unless
  // `keep_turn` (an explicit release passes it once the server has answered).
  // Returns whether this call ended it (false: it had already ended).
  bool end(lease_phase to, boost::system::error_code why, bool keep_turn = false);
  // On the strand: if still held, ends the lease as released (guarded work cancelled) and frees
  // its document in the background (a lease handle dropped, a provider shutting down).
  void release_in_background();

  std::chrono::milliseconds expiry() const { return fsm.expiry(); }

  // On the strand: when the holder stops believing in the lease unless a renewal succeeds first
  // (the soak's fenced resource checks entries against it).
  boot_clock::time_point deadline() const { return fsm.deadline(); }
  // The deadline as last published by the strand (at start and after each successful renewal),
  // for readers on any thread (lease::time_left).
  boot_clock::time_point published_deadline() const {
    return boot_clock::time_point(boot_clock::duration(published_deadline_.load(std::memory_order_acquire)));
  }

  void add_waiter(std::uint64_t id, boost::asio::any_completion_handler<void(boost::system::error_code)> h,
                  boost::asio::cancellation_slot slot, boost::asio::any_completion_executor ex);
  void cancel_waiter(std::uint64_t id);

  const std::shared_ptr<provider_impl> prov;
  const strand_type strand;
  const std::string name, owner;
  const std::int64_t token;
  // When the take that acquired the lease was sent (constant: any thread; lease::held_for).
  const boot_clock::time_point acquired_sent;
  std::atomic<lease_phase> phase{lease_phase::held};
  std::atomic<std::uint64_t> next_waiter{0};
  // The name's turn, if the acquire that won this lease had it (name_turns.hpp): set once,
  // before start(); passed on when the lease ends, or by its release once answered (release.cpp).
  name_turn turn;
  // Others were in the lock's line when this lease took it (set once, before start()): its
  // release frees the lock for them rather than trying a local hand-off first.
  bool others_in_line = false;
  // The line as this lease's take or hand-off left it, as far as it saw (set once, before
  // start()): its release hands the lock to the head (release.cpp), requiring these entries.
  std::vector<line_entry> line_seen;
  std::int64_t tickets_seen = 0;

 private:
  boost::asio::awaitable<void> renew_loop();
  void arm_watchdog();
  void lose_at_deadline();  // the local deadline passed: lost, and freed 2 x margin later

  struct waiter {
    std::uint64_t id;
    boost::asio::any_completion_handler<void(boost::system::error_code)> handler;
    boost::asio::cancellation_slot slot;
    boost::asio::any_completion_executor ex;
  };
  static void complete(waiter w, boost::system::error_code ec);

  void publish_deadline() { published_deadline_.store(fsm.deadline().time_since_epoch().count(), std::memory_order_release); }

  lease_fsm fsm;  // every decision of the renewal loop and the watchdog (strand only)
  // From construction: a lease handed out before its start() ran (a local hand-off posts it) has
  // its first deadline already.
  std::atomic<boot_clock::rep> published_deadline_{fsm.deadline().time_since_epoch().count()};
  boot_timer renew_timer, watchdog;  // both count suspended time
  // The batch's answer to the renewal request numbered renewal_seq (strand only).
  std::uint64_t renewal_seq = 0;
  std::optional<renewal_outcome> answer;
  boost::asio::cancellation_signal stop_loop;
  // A list, not a vector: erasing from a vector moves the later waiters by move assignment, and
  // Boost 1.81's any_completion_handler move assignment recurses without end.
  std::list<waiter> waiters;
};

// The release of a held lease (release.cpp): to the head of its line, to a local waiter, or
// plainly (docs/design.md sections 7 and 8). Ends the lease before anything is sent.
boost::asio::awaitable<std::tuple<boost::system::error_code>> release(std::shared_ptr<lease_state> st,
                                                                      diagnostics* d);

}  // namespace mongolock::detail
