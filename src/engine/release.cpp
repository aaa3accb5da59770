// A lease's release: release_fsm decides every step (to the head of the line, to a local waiter,
// or plainly; docs/design.md sections 7 and 8), the engine's driver (fsm_driver.hpp) performs
// them. Here: its adapter (the store call of each action, the give-backs each outcome asks for)
// and the turn of the name passed on.
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "engine/fsm_driver.hpp"
#include "engine/lease_state.hpp"
#include "sansio/release_fsm.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// The outcome of a release for its caller: `why` goes to the caller's diagnostics (if any) and,
// as for every failure a caller receives, to the log at debug level only (error.hpp).
error_code settle(const lease_state& st, diagnostics* d, error_code ec, std::string why) {
  if (ec) st.prov->log(log_level::debug, [&] { return "release of '" + st.name + "': " + ec.message() + ": " + why; });
  if (d) d->reason = std::move(why);
  return ec;
}

struct turn_after_release {
  std::shared_ptr<lease_state> st;
  ~turn_after_release() { st->turn.pass(); }
};

release_params params_of(const lease_state& st) {
  release_params r;
  r.name = st.name;
  r.owner = st.owner;
  r.token = st.token;
  r.expiry = st.expiry();
  r.line_seen = st.line_seen;
  r.tickets_seen = st.tickets_seen;
  r.others_in_line = st.others_in_line;
  return r;
}

// The first parked acquire of the lease's name, if the lease holds the name's turn. It stays
// parked (its deadline and cancellation keep working) until a hand-off has landed.
struct local_offer {
  std::shared_ptr<parked_acquire> acquire;
  std::optional<local_waiter> waiter;
};
local_offer offer_local(const lease_state& st) {
  local_offer o;
  if (!st.turn.held()) return o;
  o.acquire = st.prov->turns.first(st.name);
  if (!o.acquire) return o;
  const lock_options& opts = o.acquire->timing ? *o.acquire->timing : st.prov->opts;
  o.waiter = local_waiter{new_owner_id(), opts.expiry, opts.effective_margin(), opts.effective_renew_every()};
  return o;
}

// A hand-off landed: the turn goes to whoever is first in line now. To the line: the enrolled
// local acquire (if still first) starts in line. Locally: `local` gets the lease taken for it,
// unless it timed out or was cancelled meanwhile, or the reply was late (then the lock taken for
// it is given back).
void pass_on_after_hand_off(const std::shared_ptr<lease_state>& st, const release_fsm& fsm, const release_action& a,
                            const std::shared_ptr<parked_acquire>& local, boot_clock::time_point sent) {
  auto p = st->prov;
  const take_request& t = fsm.request();
  auto first = st->turn.hand_on();
  if (a.to == release_action::handed::to_line) {
    if (t.enroll && first && first == local)
      first->enrolled = line_enrollment{t.enroll->owner, t.enroll->ticket, sent};
    else if (t.enroll)
      leave_line_in_background(p, st->name, t.enroll->owner);  // it left meanwhile
    if (first) resume_parked(p, std::move(first));
    return;
  }
  if (first && first == local && !a.late) {
    grant_handed_over(p, std::move(first), t.owner, t.token, sent, fsm.bound(sent));
    return;
  }
  p->release_in_background(t.name, t.owner, t.token);
  if (first) resume_parked(p, std::move(first));
}

// The give-backs and counts an action asks for, before the action.
void carry_out_effects(const std::shared_ptr<lease_state>& st, const release_fsm& fsm, const release_action& a) {
  auto p = st->prov;
  const take_request& t = fsm.request();
  if (a.count_release) p->count.releases.fetch_add(1, std::memory_order_relaxed);
  if (a.leave_enrolled && t.enroll) leave_line_in_background(p, st->name, t.enroll->owner);
  if (a.give_back_handed) p->release_in_background(t.name, t.owner, t.token, {}, true);
  if (a.give_back_own) p->release_in_background(st->name, st->owner, st->token);
}

// release_fsm as fsm_driver.hpp drives it: the store call each action asks for, the give-backs
// and counts an action asks for (carried out as the machine decides it, before its call), and the
// local waiter offered at each decision. It remembers the hand-off in flight: the local acquire
// offered for it and its send time (a landed hand-off is always the answer to the last write).
class release_run {
 public:
  using action = release_action;

  release_run(std::shared_ptr<lease_state> st, release_fsm& fsm) : st_(std::move(st)), fsm_(fsm) {}

  store_ops& ops() { return st_->prov->ops; }
  static driver_step step(const action& a) {
    return a.what == release_action::kind::done ? driver_step::done : driver_step::call;
  }
  action start() {
    local_ = offer_local(*st_);
    return effects(fsm_.resume(release_input::start(local_.waiter)));
  }

  fsm_call call(const action& a) {
    fsm_call c;
    c.sent = boot_clock::now();
    c.name = &st_->name;
    switch (a.what) {
      case release_action::kind::hand_to_line:
      case release_action::kind::hand_over:
        c.what = fsm_call::op::take;
        c.request = fsm_.request();
        if (a.what == release_action::kind::hand_over) c.request.meta = st_->prov->meta;
        offered_ = local_.acquire;
        sent_ = c.sent;
        break;
      case release_action::kind::release:
        c.what = fsm_call::op::release;
        c.owner = &st_->owner;
        c.number = st_->token;
        sent_ = c.sent;
        break;
      case release_action::kind::read: c.what = fsm_call::op::read; break;
      case release_action::kind::done: std::abort();  // step(): no call
    }
    return c;
  }

  // `r` is moved into the machine's input: a reply is read once.
  action resume(const action& a, fsm_reply& r) {
    if (a.what != release_action::kind::read)
      return effects(fsm_.resume(release_input::written(std::move(r.wrote), r.sent, r.received)));
    // Offered only when the read leads to a new decision (an owner id costs a getrandom).
    local_ = fsm_.decides_after_read() ? offer_local(*st_) : local_offer{};
    return effects(fsm_.resume(release_input::read(std::move(r.doc), local_.waiter)));
  }

  const std::shared_ptr<parked_acquire>& offered() const { return offered_; }
  boot_clock::time_point sent() const { return sent_; }

 private:
  action effects(action a) {
    carry_out_effects(st_, fsm_, a);
    return a;
  }

  std::shared_ptr<lease_state> st_;
  release_fsm& fsm_;
  local_offer local_;
  std::shared_ptr<parked_acquire> offered_;
  boot_clock::time_point sent_{};
};

asio::awaitable<std::tuple<error_code>> run_release(std::shared_ptr<lease_state> st, diagnostics* d) {
  release_fsm fsm(params_of(*st));
  // A release never waits and is never cancelled (lease.hpp): drive() must not look for either.
  static_assert(!driver_detail::waits<release_run>, "a release has no waits (fsm_driver.hpp)");
  release_run run(st, fsm);
  auto first = run.start();
  auto driven = drive(run, std::move(first));
  auto a = co_await std::move(driven);
  if (a.to != release_action::handed::none) pass_on_after_hand_off(st, fsm, a, run.offered(), run.sent());
  // Otherwise the turn passes on (next_turn in release()) once this release has answered.
  co_return settle(*st, d, a.ec, std::move(a.why));
}

}  // namespace

asio::awaitable<std::tuple<error_code>> release(std::shared_ptr<lease_state> st, diagnostics* d) {
  switch (st->phase.load()) {
    case lease_phase::lost:
      co_return settle(*st, d, make_error_code(errc::lease_lost), "the lease had been lost before the release");
    case lease_phase::released:
      co_return settle(*st, d, make_error_code(errc::not_held), "the lease was already released");
    case lease_phase::held: break;
  }
  // Taken before end(): a shutdown that finds this lease no longer held still waits for its
  // release.
  auto p = st->prov;
  const auto working = p->begin_work();
  // The next parked acquire of this name starts when the release has answered (on every way out
  // of this body), so it can swap against the free document the release left: one round trip.
  const turn_after_release next_turn{st};
  // Guarded work is cancelled before the lock is freed, never after.
  st->end(lease_phase::released, make_error_code(errc::released), true);
  auto run = run_release(st, d);
  co_return co_await std::move(run);
}

}  // namespace mongolock::detail
