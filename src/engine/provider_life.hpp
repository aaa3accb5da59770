#pragma once
// A provider's life (docs/design.md section 12): the work in flight that a clean shutdown waits
// for, the shutdown itself (new acquisitions refused, waiting ones woken), the leases alive, and
// the failure a shutdown reports. One mutex: a lease registered while the provider closes is
// either refused or seen by close(), never missed.
#include <boost/system/error_code.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/clocks.hpp"

namespace mongolock::detail {

struct lease_state;

class provider_life {
 public:
  // Work that must finish before a clean exit (an acquire in flight, the watcher of a take whose
  // acquire was abandoned, a release in the background) is counted from start_work to end_work;
  // the provider is idle when none is left (provider_impl::begin_work hands out the ticket).
  void start_work();
  void end_work();
  // Calls `f` once no work is left: at once (inline) if none is.
  void when_idle(std::function<void()> f);

  // From now on acquisitions are refused; runs every registered canceller (outside the lock).
  void close();
  // Lock-free: every waiting acquire asks on every turn.
  bool closing() const { return closing_; }
  // A waiting acquisition registers how to wake it; close() calls it. Returns a handle for forget.
  std::uint64_t on_close(std::function<void()> cancel);
  void forget_on_close(std::uint64_t id);

  // Registers a granted lease; false once closing (the caller gives it back), so that no lease
  // slips past close().
  bool add_live(const std::string& owner, const std::shared_ptr<lease_state>& s);
  void remove_live(const std::string& owner);
  std::vector<std::shared_ptr<lease_state>> live_leases() const;
  std::size_t live_count() const;

  // A background release that gave up (the lock then expires on its own): shutdown reports it.
  // The first close() forgets what failed before it.
  struct noted_failure {
    boost::system::error_code ec;
    std::string why;
  };
  void note_failure(boost::system::error_code ec, std::string why);
  noted_failure failure() const;

  // How long a give-back ladder may still be at work (design.md section 4, "Give-back"): a ladder
  // notes, as it starts and after each reply without an error, the latest instant its remaining
  // attempts and a reply may take, and shutdown waits at least that long. A ladder whose calls
  // fail (an outage: it cannot finish anyway) extends it no further than its start's note.
  void note_ladder_until(steady_clock::time_point t);
  steady_clock::time_point ladder_until() const;

 private:
  mutable std::mutex mu_;
  std::atomic<bool> closing_{false};  // written under mu_
  std::size_t working_ = 0;
  std::vector<std::function<void()>> idle_waiters_;
  std::uint64_t next_canceller_ = 0;
  std::unordered_map<std::uint64_t, std::function<void()>> cancellers_;
  noted_failure failure_;
  steady_clock::time_point ladder_until_{};
  std::unordered_map<std::string, std::weak_ptr<lease_state>> live_;
};

}  // namespace mongolock::detail
