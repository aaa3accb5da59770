#pragma once
// The acquire operation (acquire.cpp, run by fsm_driver.hpp) as the rest of the engine starts it:
// an acquire's body, the parking of an acquire behind the one that has its name's turn, the
// turn's passing on, and the line's entries it leaves behind (docs/design.md section 7).
#include <boost/asio/any_completion_handler.hpp>
#include <boost/system/error_code.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/name_turns.hpp"
#include "engine/spawn.hpp"
#include "model/clocks.hpp"
#include "model/lock_document.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/lock.hpp"

namespace mongolock::detail {

struct provider_impl;
struct lease_state;
class poll_group;

// The turn of a lock name in this provider (name_turns.hpp), owned by one party at a time: the
// acquire it was given to, then the lease that acquire won, or the release of that lease. It is
// passed on exactly once, by its last owner: explicitly, or when that owner ends without doing so.
class name_turn {
 public:
  name_turn() noexcept = default;  // no turn (a try; a try_taking_turn that found it taken)
  name_turn(std::shared_ptr<provider_impl> p, std::string name) noexcept;
  name_turn(name_turn&& other) noexcept;
  // Passes a turn still held here first: an owner replaced loses nothing.
  name_turn& operator=(name_turn&& other) noexcept;
  name_turn(const name_turn&) = delete;
  name_turn& operator=(const name_turn&) = delete;
  ~name_turn() { pass(); }

  bool held() const noexcept { return held_.load(std::memory_order_acquire); }
  // Gives the turn to the next parked acquire of the name and starts it; after the first call,
  // and without a turn, does nothing.
  void pass();
  // Gives the turn to the next parked acquire of the name and returns it, not started: the caller
  // starts it (resume_parked, grant_handed_over). Null if none waits (the turn is then free) or
  // if no turn is held here.
  std::shared_ptr<parked_acquire> hand_on();

 private:
  std::shared_ptr<provider_impl> p_;
  std::string name_;
  // Atomic: a lease's end and its release may pass it from different threads.
  std::atomic<bool> held_{false};
};

// A lease for a lock just won, by an acquire's own take or by a hand-off to a parked acquire
// (docs/design.md section 7): its clock started at `clock_start`, registered with the provider.
// It takes over `turn` (the name's turn, passed on when the lease ends) and counts the
// acquisition and its wait since `since`. Null if shutdown began meanwhile: `turn` stays with the
// caller, who gives the lock back. Not started: the caller starts it on its strand.
struct line_seen_at_grant {
  bool others_in_line = false;
  std::vector<line_entry> line;
  std::int64_t tickets = 0;
};
std::shared_ptr<lease_state> make_held_lease(const std::shared_ptr<provider_impl>& p, strand_type strand,
                                             std::string name, std::string owner, std::int64_t token,
                                             boot_clock::time_point clock_start, const lock_options& o,
                                             detail::steady_clock::time_point since, name_turn& turn,
                                             line_seen_at_grant seen = {});

// Runs one acquire on a strand of its own. `turn`: its name's turn, if it has it (a wait, a
// try_taking_turn); other tries never do, and a try_taking_turn without it is busy at once.
// `enrolled`: the line entry a hand-off of this provider made for it.
void start_body(std::shared_ptr<provider_impl> p, std::string name, std::shared_ptr<const lock_options> timing,
                bool plain, acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                detail::steady_clock::time_point since, name_turn turn,
                boost::asio::any_completion_handler<void(boost::system::error_code, lease)> h,
                std::optional<line_enrollment> enrolled = std::nullopt, std::shared_ptr<poll_group> group = nullptr);
// A lock's acquire (lock::start_acquire, and a primitive's through compose.hpp): a try or a
// refused timeout starts at once; a wait takes its name's turn or parks behind the acquire that
// has it (docs/design.md section 7). `group`: the poll group of a semaphore's or writer's waits
// (section 10), which a wait that runs now joins; null for a plain lock.
void start_acquire(std::shared_ptr<provider_impl> p, std::string name, std::shared_ptr<const lock_options> timing,
                   bool plain, acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                   boost::asio::any_completion_handler<void(boost::system::error_code, lease)> h,
                   std::shared_ptr<poll_group> group = nullptr);
// Called under name_turns' lock, in the initiating context: the parked acquire answers its
// caller's cancellation and its own deadline while it waits.
void park(const std::shared_ptr<provider_impl>& p, const std::shared_ptr<parked_acquire>& w);

// Starts a parked acquire whose turn came (it reads and waits like any acquire).
void resume_parked(const std::shared_ptr<provider_impl>& p, std::shared_ptr<parked_acquire> next);
// Takes `owner`'s entry out of the line of `name` in the background. `gave_up`: the acquire ends
// without a lease; if the entry is no longer there, a releaser may have handed the lock to it,
// and that is freed too. After a grant (not `gave_up`) a missing entry means nothing: the lock
// that owner id names is the lease just granted (docs/design.md section 7, point 10).
enum class leaving { gave_up, granted };
void leave_line_in_background(const std::shared_ptr<provider_impl>& p, const std::string& name,
                              const std::string& owner, leaving why = leaving::gave_up);
// Completes a parked acquire with the lease a hand-off took for it: (owner, token), its clock
// started at `sent`. If it was cancelled or timed out meanwhile, the lock is
// given back instead and the turn passes on; past `bound` (a late grant) it is given back and
// the acquire goes on the usual way.
void grant_handed_over(const std::shared_ptr<provider_impl>& p, std::shared_ptr<parked_acquire> next,
                       std::string owner, std::int64_t token, boot_clock::time_point sent,
                       boot_clock::time_point bound);

}  // namespace mongolock::detail
