#pragma once
// What an acquire does next, decided without I/O and without reading a clock: the engine's driver
// (src/engine/fsm_driver.hpp, with acquire.cpp's adapter) performs each action against the store
// and feeds what happened back through resume(), one acquire_input each, with the time it
// observed. Unit-tested in test/sansio/acquire_fsm_test.cpp.
//
// Safety rules it enforces (docs/design.md):
// - a take is a grant only if its reply arrived before sent + expiry - margin (a late grant is
//   given back: the holder's own deadline had already passed);
// - a write-concern error is never a grant: the take may be rolled back;
// - a take whose outcome is unknown is re-checked with a majority read; until confirmed either
//   way it stays "unconfirmed", and every unconfirmed take is given back when the call ends
//   without it (so is a take abandoned by a timeout or a cancellation: it may still land, and
//   its late reply may never be seen); a read that shows our own owner id is ours, not a
//   stranger to wait out.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sansio/backoff.hpp"
#include "model/clocks.hpp"
#include "sansio/expiry_observer.hpp"
#include "model/jitter_rng.hpp"
#include "model/lock_document.hpp"

namespace mongolock::detail {

struct acquire_params {
  bool try_once = false;  // one look: errc::busy instead of waiting for a live holder
  bool confirm_silent = false;  // try_once: watch a long-silent holder for expiry + margin
  bool in_turn = false;         // try_once: busy while anyone is in the line, as for a waiting acquire
  bool read_first = false;      // the caller has just seen the lock held: start with a read
  std::string owner;
  std::optional<boot_clock::time_point> deadline;  // nullopt: wait until cancelled
  std::chrono::milliseconds expiry{0}, margin{0}, backoff_min{0}, backoff_max{0};
  std::uint64_t seed = 0;
  std::int64_t wall_now_ms = 0;        // try_once: the local wall clock, a hint only
  // token_clock() when the acquire was built (lock_document.hpp): the FSM reads no clock, so a
  // take's candidate token is this, advanced by the time elapsed since start() on the inputs' clock.
  // 0: no reading (the FSM's unit tests), tokens go by one.
  std::int64_t token_clock = 0;
  // How often an acquire in the line shows that it is still there (the lease's renewal period):
  // a lock handed to it starts its clock at the last such write, so that write must be recent.
  std::chrono::milliseconds refresh_every{0};
  // Put in the line by this provider's own hand-off (release.cpp) with `ticket`, by an update sent
  // at `sent`: the acquire starts in line, with `owner` as its owner id.
  struct line_place {
    std::int64_t ticket = 0;
    boot_clock::time_point sent{};
  };
  std::optional<line_place> enrolled;
};

struct acquire_action {
  enum class kind {
    read,        // read the lock (primary, majority read concern)
    recheck,     // read the lock with majority read concern, after an ambiguous take
    take,        // request(): compare-and-swap against what was observed, granting `token`
    give_back,   // release (owner, token) and wait for the answer: a take we may not keep
    join,        // join the lock's line with join_ticket(), then resume(acquire_input::joined)
    refresh,     // refresh_line with line_ticket() (still in line), then resume(refreshed)
    wait_until,  // sleep until `at`
    grant,       // done: the lease is ours with `token`; its clock starts at `at` (send time)
    fail,        // done: `ec`, `why`; the driver gives back every unconfirmed take
  };
  acquire_action(kind k = kind::read) : what(k) {}  // NOLINT: implicit on purpose ({kind::read})

  kind what;
  std::int64_t token = 0;
  boot_clock::time_point at{};
  boost::system::error_code ec;
  std::string why;
};

// What happened since the last action: the one input of resume(). A store action of the same
// name answered (its reply and when it came), the acquire began, a wait ended, or it was
// cancelled. Build it with the named constructors below.
struct acquire_input {
  using time_point = boot_clock::time_point;
  enum class kind { start, read, recheck, take, give_back, join, refresh, timer, cancel };

  kind what = kind::start;
  time_point now{};       // when it happened: a reply's arrival, a timer's firing, the start
  time_point sent{};      // take, join, refresh: when the request left (a lease clock may start then)
  outcome<lock_doc> doc;  // read, recheck
  outcome<bool> wrote;    // take, give_back, join, refresh

  static acquire_input start(time_point now) { return {kind::start, now, {}, {}, {}}; }
  static acquire_input read(outcome<lock_doc> r, time_point received) {
    return {kind::read, received, {}, std::move(r), {}};
  }
  static acquire_input recheck(outcome<lock_doc> r, time_point received) {
    return {kind::recheck, received, {}, std::move(r), {}};
  }
  static acquire_input take(outcome<bool> r, time_point sent, time_point now) {
    return {kind::take, now, sent, {}, std::move(r)};
  }
  static acquire_input given_back(outcome<bool> r, time_point now) {
    return {kind::give_back, now, {}, {}, std::move(r)};
  }
  static acquire_input joined(outcome<bool> r, time_point sent, time_point now) {
    return {kind::join, now, sent, {}, std::move(r)};
  }
  static acquire_input refreshed(outcome<bool> r, time_point sent, time_point now) {
    return {kind::refresh, now, sent, {}, std::move(r)};
  }
  static acquire_input timer(time_point now) { return {kind::timer, now, {}, {}, {}}; }
  static acquire_input cancel() { return {kind::cancel, {}, {}, {}, {}}; }
};

// "no server answered in the last N ms: <the driver's last words>": the reason an acquire that
// rode an outage out gives at its deadline, the provider's first contact's too (acquire.cpp).
std::string no_server_reason(std::chrono::milliseconds silent, const std::string& last);

class acquire_fsm {
 public:
  using time_point = boot_clock::time_point;  // every instant counts suspended time (model/clocks.hpp)

  acquire_fsm(std::string name, acquire_params p);

  // Everything the acquire does next follows from what happened (input.what):
  // - start: a blind take (docs/design.md section 1), unless our provider's hand-off put us in
  //   line already, or the caller has just seen the lock held (read_first);
  // - take: `sent` is when the take request left (the driver's clock just before starting it);
  // - join, refresh: `sent` is when the write left. A lock handed to us starts its clock at the
  //   send time of the last write of our entry that the hand-off must have come after.
  acquire_action resume(const acquire_input& in);

  // The take to send for a `take` action (kept here, not in every action: each waiting
  // coroutine carries an action in its frame). The driver adds the holder metadata.
  take_request request() const;
  // The call to bound a take with: its reply is useless after this (a grant after it would leave
  // too little of the lease to reach its first renewal: lease_clock.hpp, grant_bound).
  time_point take_bound(time_point sent) const;
  const std::optional<time_point>& deadline() const { return p_.deadline; }
  const std::string& name() const { return name_; }
  const std::string& owner() const { return p_.owner; }
  // Tokens of takes that may have been applied and were not granted: give them back.
  const std::vector<std::int64_t>& unconfirmed() const { return unconfirmed_; }
  // Takes abandoned while in flight; the driver also gives each back when its late reply comes.
  const std::vector<std::int64_t>& abandoned() const { return abandoned_; }
  // Grouped takes judged missed by a read that may predate them (docs/design.md section 14): each
  // given back once when the call ends without a grant, as an abandoned take.
  const std::vector<std::int64_t>& judged_missed() const { return judged_missed_; }
  std::uint64_t lost_races() const { return lost_races_; }
  // The line (docs/design.md section 7): the ticket of a `join`; whether a join was sent (its entry
  // may be in the line even if its reply was lost); whether the take being granted removed it.
  std::int64_t join_ticket() const { return join_ticket_; }
  std::int64_t line_ticket() const { return line_ticket_; }
  // The read to send for a `read` action: always majority. Every read may start or continue an
  // observation window, and a state a failover can still roll back must start none (docs/
  // design.md section 3); a read showing the lock ours (our take, a hand-off) is then committed.
  static constexpr read_mode read_mode_now() { return read_mode::majority; }
  bool joined() const { return joins_ > 0; }
  bool left_line_with_take() const { return left_with_take_; }
  // Whether the document the granted take replaced had others in line (besides those the take
  // removed): the lease then releases plainly instead of trying a local hand-off first.
  bool others_in_line() const {
    return pending_observed_.waiting > static_cast<std::int64_t>(leaving_.size()) ||
           pending_observed_.line.size() > leaving_.size();
  }
  // The line as the granted take or hand-off left it (as far as we saw), and its next ticket:
  // the lease's release hands the lock to its head (release.cpp).
  std::vector<line_entry> line_after_grant() const;
  std::int64_t tickets_after_grant() const { return pending_observed_.tickets; }
  std::uint64_t busy_observations() const { return busy_; }
  // Observations of a document whose expiry_ms no mongolock holder could have written (it was
  // clamped to limits::min_expiry..max_expiry): the driver reports them.
  std::uint64_t out_of_bounds_observations() const { return out_of_bounds_; }

 private:
  acquire_action start(time_point now);
  acquire_action on_read(const outcome<lock_doc>& r, time_point received);
  acquire_action on_recheck(const outcome<lock_doc>& r, time_point received);
  acquire_action on_take(const outcome<bool>& r, time_point sent, time_point now);
  acquire_action on_given_back(const outcome<bool>& r, time_point now);
  acquire_action on_joined(const outcome<bool>& r, time_point sent, time_point now);
  acquire_action on_refreshed(const outcome<bool>& r, time_point sent, time_point now);
  acquire_action step(const acquire_input& in);
  acquire_action on_timer(time_point now);
  acquire_action on_cancel();
  acquire_action no_server(time_point sent, time_point now, const std::string& why);
  acquire_action wait_at_most_until_deadline(time_point now);
  std::string unreachable_reason(time_point now) const;

  static acquire_action read() { return {acquire_action::kind::read}; }
  acquire_action fail(boost::system::error_code ec, std::string why = {});
  acquire_action take_next(const lock_doc& observed, time_point now);
  std::int64_t clock_at(time_point now) const;
  acquire_action take(std::int64_t token);
  acquire_action grant(std::int64_t token, time_point clock_start);
  acquire_action decide(const lock_doc& seen, time_point received);
  acquire_action wait_or_give_up(time_point now, bool changed, const lock_doc& seen);
  acquire_action wait_in_line(time_point now, bool changed, const lock_doc& seen);
  acquire_action paced_in_line(acquire_action next, time_point now) const;
  boot_clock::duration refresh_period() const;
  acquire_action take_in_line(const lock_doc& seen, std::vector<line_entry> leaving, bool nobody_waiting,
                              time_point now);
  bool in_line(const lock_doc& seen) const;
  acquire_action give_back(std::int64_t token);
  bool past_deadline(time_point now) const;
  void remember_unconfirmed(std::int64_t token);
  void forget_unconfirmed(std::int64_t token);
  void note_take_sent(std::int64_t token, time_point sent);
  std::optional<time_point> earliest_take_sent(std::int64_t token) const;

  std::string name_;
  acquire_params p_;
  backoff wait_;
  expiry_observer observer_;
  // The head of the line while the lock is takeable and the head is someone else: a head that
  // leaves it untaken for its whole expiry + margin is gone, and loses its place.
  expiry_observer head_observer_;
  held_state holder_;                 // the current hold (owner, token) and when we first saw it
  time_point holder_since_{};
  std::vector<line_entry> leaving_;   // what the pending take removes from the line
  bool nobody_waiting_ = false;       // the pending take requires an empty line
  bool left_with_take_ = false;
  std::int64_t join_ticket_ = 0;
  int joins_ = 0;         // joins that were applied or may have been: our entry may be in the line
  int lost_tickets_ = 0;  // joins that lost the ticket race: certainly not applied
  acquire_action after_line_write_;   // the wait decided before a join or refresh, resumed after it
  std::int64_t line_ticket_ = 0;      // our ticket, as the last read showed it (for a refresh)
  // The send time of the last write of our entry (join or refresh) known to have been applied
  // before any hand-off to us could be: a hand-off removes the entry, so a refresh that matched
  // came before it, and a hand-off needs the entry, so the join did.
  std::optional<time_point> entry_sent_;
  jitter_rng rng_;
  // Since when no server has answered (the send of the first call that found none), and what the
  // last such call said: the reason an acquire that reaches its deadline then gives.
  std::optional<time_point> unreachable_since_;
  std::string last_server_error_;
  time_point read_sent_{};            // when the last read was asked for
  bool verifying_ = false;            // try_once: confirming that a silent holder is gone
  time_point started_{};              // start()'s instant: token_clock's reading then
  bool looked_first_ = false;         // the take in flight is start()'s blind take
  lock_doc pending_observed_;         // what the pending take compares against
  std::int64_t pending_token_ = 0;    // the token of the take in flight
  std::int64_t giving_back_ = 0;      // the token of the give-back in flight
  // Per token, the earliest send of a take that was not granted and may have landed (unconfirmed,
  // abandoned, answered too late, or judged missed by a read): a read showing our owner id with
  // that token counts from it.
  std::vector<std::pair<std::int64_t, time_point>> take_sent_;
  std::vector<std::int64_t> unconfirmed_;
  // Never granted from a read (docs/design.md section 3, decisions made from a read alone): a
  // state below the highest token any read of this acquire showed, ours at or below the highest
  // token of a state not ours, or a token it gave back (given back again after a wait if seen).
  std::int64_t highest_read_ = 0, highest_not_ours_ = 0;
  std::vector<std::int64_t> given_back_;
  std::optional<std::int64_t> give_back_after_wait_;
  std::vector<std::int64_t> judged_missed_;
  std::vector<std::int64_t> abandoned_;  // timed out or cancelled in flight, not seen since
  std::uint64_t lost_races_ = 0, busy_ = 0, out_of_bounds_ = 0;
};

}  // namespace mongolock::detail
