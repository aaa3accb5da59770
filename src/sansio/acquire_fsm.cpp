#include "sansio/acquire_fsm.hpp"

#include <algorithm>
#include <limits>
#include <boost/asio/error.hpp>

#include "model/lease_clock.hpp"
#include "model/saturating.hpp"
#include "mongolock/error.hpp"

namespace mongolock::detail {

namespace {
using kind = acquire_action::kind;
using boost::system::error_code;
namespace aerr = boost::asio::error;

// Joins whose ticket raced another joiner's are retried at later reads, this many at most (then
// the acquire waits unregistered, reads only). Joins that were applied, or may have been, do not
// count: an acquire whose entry went (it was handed the lock and gave it back, or was removed as
// a head that never came) joins again.
constexpr int max_joins = 5;

// Said when an acquire ends with a take whose outcome is unknown: the caller has nothing to free.
constexpr const char* unknown_take_note = "; a take whose outcome is unknown is given back";
constexpr const char* recheck_failed = "take outcome unknown; re-check failed: ";

// The FSM's lists of tokens (unconfirmed, abandoned, given back, judged missed) hold each once.
bool listed(const std::vector<std::int64_t>& tokens, std::int64_t token) {
  return std::find(tokens.begin(), tokens.end(), token) != tokens.end();
}
void add_once(std::vector<std::int64_t>& tokens, std::int64_t token) {
  if (!listed(tokens, token)) tokens.push_back(token);
}
}  // namespace

std::string no_server_reason(std::chrono::milliseconds silent, const std::string& last) {
  return "no server answered in the last " + std::to_string(silent.count()) + " ms" + (last.empty() ? "" : ": " + last);
}

acquire_fsm::acquire_fsm(std::string name, acquire_params p)
    : name_(std::move(name)), p_(std::move(p)), wait_(p_.backoff_min, p_.backoff_max), rng_(p_.seed) {
  if (p_.enrolled) {  // in line already: our own provider's hand-off wrote the entry
    joins_ = 1;
    join_ticket_ = line_ticket_ = p_.enrolled->ticket;
    entry_sent_ = p_.enrolled->sent;
  }
}

acquire_action acquire_fsm::resume(const acquire_input& in) {
  auto next = step(in);
  if (next.what == kind::read || next.what == kind::recheck) read_sent_ = in.now;  // the driver sends it now
  return next;
}

acquire_action acquire_fsm::step(const acquire_input& in) {
  using in_kind = acquire_input::kind;
  switch (in.what) {
    case in_kind::start: return start(in.now);
    case in_kind::read: return on_read(in.doc, in.now);
    case in_kind::recheck: return on_recheck(in.doc, in.now);
    case in_kind::take: return on_take(in.wrote, in.sent, in.now);
    case in_kind::give_back: return on_given_back(in.wrote, in.now);
    case in_kind::join: return on_joined(in.wrote, in.sent, in.now);
    case in_kind::refresh: return on_refreshed(in.wrote, in.sent, in.now);
    case in_kind::timer: return on_timer(in.now);
    case in_kind::cancel: return on_cancel();
  }
  return on_cancel();  // not reached: every kind is handled above
}

acquire_action acquire_fsm::start(time_point now) {
  started_ = now;
  if (p_.enrolled) {
    // Our provider has just handed the lock to another process, which needs a read of its own to
    // find it and then holds it: a read now would only find it held. Look after one first delay,
    // paced as any wait in line: the lock may come to us from the line meanwhile.
    acquire_action a{kind::wait_until};
    std::uniform_int_distribution<long long> pick(p_.backoff_min.count(), 2 * p_.backoff_min.count());
    a.at = now + std::chrono::milliseconds{pick(rng_)};
    a = paced_in_line(a, now);
    if (p_.deadline) a.at = std::min(a.at, *p_.deadline);
    return a;
  }
  if (p_.read_first) return read();  // seen held a moment ago: a blind take would only miss
  // A free lock is taken without a read: one round trip (docs/design.md section 1). Only while
  // nobody is in line, for a try too: a take that knows the line is empty needs no read to learn
  // it for its release (section 7). Anything else answers "not taken", and we read.
  looked_first_ = true;
  return take_in_line(lock_doc{}, {}, true, now);
}

acquire_action acquire_fsm::fail(error_code ec, std::string why) {
  acquire_action a{kind::fail};
  a.ec = ec;
  a.why = std::move(why);
  return a;
}

bool acquire_fsm::past_deadline(time_point now) const { return p_.deadline && now >= *p_.deadline; }

acquire_action acquire_fsm::on_read(const outcome<lock_doc>& r, time_point received) {
  // A look sent within the shortest wait of the deadline after the lock was seen held, and cut
  // short there (only async_call's deadline gives errc::timeout), ends the wait as the deadline
  // itself does (on_timer): the holder is why it failed, not the read "in flight" then. A poll
  // group wakes its waits together, so a look may go out just before its deadline (docs/design.md
  // section 10). A look sent earlier that hung until the deadline keeps its reason: the server.
  if (r.ec == errc::timeout && busy_ > 0 && p_.deadline && *p_.deadline - read_sent_ < p_.backoff_min)
    return fail(make_error_code(verifying_ ? errc::busy : errc::timeout), unreachable_reason(received));
  if (r.ec == errc::server_unavailable) return no_server(read_sent_, received, r.message);
  if (r.ec == errc::timeout && unreachable_since_) return fail(r.ec, unreachable_reason(received));
  if (r.ec) return fail(r.ec, r.message);
  return decide(r.value, received);  // a majority read: our own owner id there is committed
}

acquire_action acquire_fsm::on_recheck(const outcome<lock_doc>& r, time_point received) {
  if (r.ec == errc::timeout)  // cut short at the deadline: the take stays unconfirmed, given back
    return fail(r.ec, unreachable_since_ ? unreachable_reason(received) : r.message + unknown_take_note);
  if (r.ec == aerr::operation_aborted) return fail(r.ec, r.message);
  // The take stays unconfirmed (given back if the acquire ends without it); the read after the
  // wait is the same majority read.
  if (r.ec == errc::server_unavailable) return no_server(read_sent_, received, r.message);
  if (r.ec) return fail(make_error_code(errc::ambiguous_result), recheck_failed + r.message);
  return decide(r.value, received);
}

// No server could be selected (an election, a primary's crash): a waiting acquire keeps trying
// until its own deadline, paced by the backoff on top of the selection time each call already
// took, and then ends with timeout and the server as its reason (docs/design.md section 4). An
// acquire without a deadline waits, as it does for a holder. A try looks once: it fails at once.
acquire_action acquire_fsm::no_server(time_point sent, time_point now, const std::string& why) {
  if (p_.try_once) {
    // A try whose take's outcome is still unknown says so: "no server" would read as "nothing happened".
    if (!unconfirmed_.empty())
      return fail(make_error_code(errc::ambiguous_result), recheck_failed + why);
    return fail(make_error_code(errc::server_unavailable), why);
  }
  if (!unreachable_since_) unreachable_since_ = sent;
  last_server_error_ = why;
  if (past_deadline(now)) return fail(make_error_code(errc::timeout), unreachable_reason(now));
  return wait_at_most_until_deadline(now);
}

std::string acquire_fsm::unreachable_reason(time_point now) const {
  if (!unreachable_since_) return {};
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - *unreachable_since_);
  return no_server_reason(silent, last_server_error_) + (unconfirmed_.empty() ? "" : unknown_take_note);
}

acquire_action acquire_fsm::decide(const lock_doc& seen, time_point received) {
  unreachable_since_.reset();  // a server answered
  // The name is a semaphore's or a rw_lock's (docs/design.md section 10): never a lock's to take.
  if (seen.declared)
    return fail(make_error_code(errc::declaration_mismatch),
                "'" + name_ + "' is declared as " + describe(*seen.declared) + ", not a lock");
  // A majority read is not monotonic across a failover: a new primary's majority snapshot may
  // predate states this acquire already read (docs/design.md section 3, decisions made from a read
  // alone). Tokens of one life never go down, and a state of ours at token T comes before any
  // other state at T (a give-back, a force release keep the token; a take raises it): so ours
  // below the highest token read, or at or below the highest token read in a state not ours, is
  // one of those older states, and a clock started at any write of ours since could start after it.
  const bool ours = seen.exists && seen.held.owner == p_.owner;
  const bool older = seen.exists && (seen.held.token < highest_read_ || (ours && seen.held.token <= highest_not_ours_));
  if (seen.exists) highest_read_ = std::max(highest_read_, seen.held.token);
  if (seen.exists && !ours) highest_not_ours_ = std::max(highest_not_ours_, seen.held.token);
  if (ours) {
    // A token we gave back is never ours again. Once its give-back succeeded, a read showing it is
    // an old snapshot, or a state restored from a backup: given back again after a wait (a
    // harmless miss for the one, the lock freed for the other).
    const bool returned = listed(given_back_, seen.held.token);
    if (returned && !listed(unconfirmed_, seen.held.token)) {
      ++busy_;
      if (p_.try_once) return fail(make_error_code(errc::busy));
      give_back_after_wait_ = seen.held.token;
      return wait_at_most_until_deadline(received);
    }
    // One of our own unconfirmed takes landed, or a releaser handed the lock to us from the line
    // (docs/design.md section 7): ours, if the earliest possible start leaves time. A hand-off
    // came after the last write of our entry that we know was applied, and a take after its send.
    // A take writes its own token, so only a take of this token can have written this state: the
    // send of another (an older take abandoned in flight) says nothing about it.
    std::optional<time_point> start = earliest_take_sent(seen.held.token);
    if (entry_sent_ && (!start || *entry_sent_ < *start)) start = entry_sent_;
    if (start && !older && !returned) {
      // The releaser wrote its own expiry: if shorter than ours, waiters count from that, so our
      // first deadline comes that much sooner (renewals then write ours).
      const auto doc_expiry = expiry_observer::bounded(seen.held.expiry);
      if (doc_expiry < p_.expiry) *start -= p_.expiry - doc_expiry;
      // A token we abandoned in flight is never granted: its late reply's give-back would free it.
      const bool abandoned = listed(abandoned_, seen.held.token);
      if (!abandoned && received < take_bound(*start)) {
        pending_observed_ = seen;  // the line as it is now, for our own release
        leaving_.clear();
        auto granted = grant(seen.held.token, *start);
        left_with_take_ = !in_line(seen);  // a hand-off removed our entry
        return granted;
      }
    }
    remember_unconfirmed(seen.held.token);
    return give_back(seen.held.token);
  }
  const bool free = !seen.exists || seen.held.owner.empty();
  bool changed = false;
  if (free) {
    // Free for us (nobody in line, or we head it): a take follows, and a wait after it starts
    // short. Free but left to another process's head: watched as a holder is, backing off.
    if (seen.line.empty() || seen.line.front().owner == p_.owner) wait_.reset();
    observer_.forget();
  } else {
    changed = observer_.observe(seen.held, received, p_.margin);
    if (changed && expiry_observer::out_of_bounds(seen.held.expiry)) ++out_of_bounds_;
    if (seen.held.owner != holder_.owner || seen.held.token != holder_.token) {  // a new hold (renewals keep it)
      holder_ = seen.held;
      holder_since_ = received;
    }
  }
  const bool takeable = free || observer_.expired(received);
  // Tries look once and do not queue: the line is for waiting acquires.
  if (p_.try_once) {
    if (takeable && !(p_.in_turn && !seen.line.empty())) return take_in_line(seen, {}, p_.in_turn, received);
    ++busy_;
    return wait_or_give_up(received, changed, seen);
  }
  if (!takeable) {
    head_observer_.forget();
    ++busy_;
    return wait_in_line(received, changed, seen);
  }
  if (seen.line.empty()) {
    head_observer_.forget();
    return take_in_line(seen, {}, true, received);  // only while nobody waits: a joiner meanwhile goes first
  }
  const line_entry& head = seen.line.front();
  if (head.owner == p_.owner) return take_in_line(seen, {head}, false, received);
  // Someone else is first in line and the lock is takeable: theirs to take. Watched like a
  // holder (the same document, the same head, for the head's whole window): gone if untouched.
  const held_state head_seen{head.owner + "@" + std::to_string(head.ticket), seen.held.token, seen.held.beat,
                             seen.held.expiry};
  head_observer_.observe(head_seen, received, p_.margin);
  if (head_observer_.expired(received)) {
    std::vector<line_entry> leaving{head};
    for (auto& e : seen.line)
      if (e.owner == p_.owner) leaving.push_back(e);
    return take_in_line(seen, std::move(leaving), false, received);
  }
  ++busy_;
  return wait_in_line(received, false, seen);
}

bool acquire_fsm::in_line(const lock_doc& seen) const {
  return std::any_of(seen.line.begin(), seen.line.end(), [&](const line_entry& e) { return e.owner == p_.owner; });
}

acquire_action acquire_fsm::take_in_line(const lock_doc& seen, std::vector<line_entry> leaving, bool nobody_waiting,
                                         time_point now) {
  leaving_ = std::move(leaving);
  nobody_waiting_ = nobody_waiting;
  return take_next(seen, now);
}

// A waiting acquire not yet in line joins it (one write per acquire, then reads only), unless
// the line is full or the document is missing (the next read will find it free or created).
// In line, it shows once per renewal period that it is still there (a lock handed to it starts
// its clock at that write, so the lease it gets has most of a period left).
acquire_action acquire_fsm::wait_in_line(time_point now, bool changed, const lock_doc& seen) {
  auto next = wait_or_give_up(now, changed, seen);
  if (next.what != kind::wait_until || !seen.exists) return next;
  const auto mine = std::find_if(seen.line.begin(), seen.line.end(), [&](const line_entry& e) { return e.owner == p_.owner; });
  if (mine != seen.line.end()) {
    line_ticket_ = mine->ticket;
    if (p_.refresh_every.count() <= 0 || !entry_sent_ || now - *entry_sent_ < refresh_period()) return paced_in_line(next, now);
    after_line_write_ = paced_in_line(next, now);
    return {kind::refresh};
  }
  const bool ticket_usable = seen.tickets >= 0 && seen.tickets < std::numeric_limits<std::int64_t>::max();
  if (seen.line.size() >= max_line || lost_tickets_ >= max_joins || !ticket_usable) return next;
  after_line_write_ = paced_in_line(next, now);
  join_ticket_ = seen.tickets;
  return {kind::join};
}

// How often an acquire in line writes its entry: the renewal period, but at most half of what
// a handed lock's first lease may start with (E - m), so that a lock handed over always has time.
boot_clock::duration acquire_fsm::refresh_period() const {
  const boot_clock::duration half_lease = (p_.expiry - p_.margin) / 2;
  return p_.refresh_every.count() > 0 ? std::min<boot_clock::duration>(p_.refresh_every, half_lease) : half_lease;
}

// A wait in line, paced so that a hand-off is used (docs/design.md section 7, point 6): a lock
// handed to us is ours only if we read it before our last entry write + E - m - room (take_bound).
// The entry is at most one refresh period old when due (we wake for it), so we look at least
// every (E - m - room - period) / 2, whatever the backoff says: at least (E - m) / 8, since the
// period is at most (E - m) / 2 and the room at most (E - m) / 4.
acquire_action acquire_fsm::paced_in_line(acquire_action next, time_point now) const {
  if (next.what != kind::wait_until) return next;
  const auto period = refresh_period();
  const auto room = first_renewal_room(p_.expiry, p_.margin, p_.refresh_every);
  next.at = std::min(next.at, now + (p_.expiry - p_.margin - room - period) / 2);
  if (entry_sent_ && p_.refresh_every.count() > 0) next.at = std::min(next.at, std::max(now, *entry_sent_ + period));
  return next;
}

acquire_action acquire_fsm::on_joined(const outcome<bool>& r, time_point sent, time_point) {
  // Applied, raced (someone joined with that ticket first: the next read shows the new one), or
  // unknown (the next read shows whether it landed): the wait goes on either way.
  if (!r.ec && !r.value) {
    ++lost_tickets_;  // not in line: nothing to leave, and only these count towards max_joins
    // Judged not applied by the read after a grouped command (docs/design.md section 14), which
    // may predate the command: the send stays the earliest an entry of ours may have been written,
    // so that a hand-off it enabled never starts our clock later (section 7, point 2).
    if (r.ambiguous && !entry_sent_) entry_sent_ = sent;
    return after_line_write_;
  }
  ++joins_;  // counted first: a join abandoned in flight may still land, and is left on give-up
  if (!r.ec && r.value) entry_sent_ = sent;
  else if (r.ec && !entry_sent_) entry_sent_ = sent;  // if it landed, it was sent then
  if (r.ec == aerr::operation_aborted) return fail(r.ec, r.message);
  return after_line_write_;
}

acquire_action acquire_fsm::on_refreshed(const outcome<bool>& r, time_point sent, time_point) {
  if (r.ec == aerr::operation_aborted) return fail(r.ec, r.message);
  if (!r.ec && r.value && entry_sent_) entry_sent_ = std::max(*entry_sent_, sent);
  if (!r.ec && !r.value) return read();  // out of line: handed the lock, or lost our place
  return after_line_write_;
}

std::vector<line_entry> acquire_fsm::line_after_grant() const {
  std::vector<line_entry> out;
  for (auto& e : pending_observed_.line) {
    const bool left = std::find(leaving_.begin(), leaving_.end(), e) != leaving_.end();
    if (!left && e.owner != p_.owner) out.push_back(e);
  }
  return out;
}

acquire_action acquire_fsm::wait_or_give_up(time_point now, bool changed, const lock_doc& seen) {
  if (p_.try_once && !verifying_) {
    // One look, so a live holder means busy. But a holder whose own clock says it last renewed
    // long ago has probably died, and nobody may ever wait long enough to observe that: if the
    // caller opted in, spend one observation window (expiry + margin) confirming it. Only the
    // unchanged heartbeat decides; a wrong clock can cost this one bounded wait, never safety.
    // A force-released lock's placeholder never renews: watching it is how a try gets it.
    const auto silent_ms = saturating_sub(p_.wall_now_ms, seen.renewed_at_ms);
    const bool looks_dead = seen.held.owner == broken_owner ||
                            (seen.renewed_at_ms != 0 && silent_ms >= 3 * expiry_observer::bounded(seen.held.expiry).count());
    if (!p_.confirm_silent || !looks_dead) return fail(make_error_code(errc::busy));
    verifying_ = true;
  } else if (verifying_ && changed) {
    return fail(make_error_code(errc::busy));  // it renewed: alive after all
  }
  auto delay = boot_clock::duration(wait_.next(rng_));
  // First in line: the lock is ours to take as soon as it is free. Look again after half as long
  // as the holder has held it so far (observed by us), within backoff_min..backoff_max: a short
  // hold is noticed within a few ms, a long one costs a few reads (docs/design.md section 7).
  if (!seen.line.empty() && seen.line.front().owner == p_.owner && !seen.held.owner.empty()) {
    using ms = std::chrono::milliseconds;
    const auto held_for = std::chrono::duration_cast<ms>(now - holder_since_);
    const auto base = std::clamp(held_for / 2, p_.backoff_min, p_.backoff_max);
    std::uniform_int_distribution<long long> pick(base.count(), std::min(2 * base, p_.backoff_max).count());
    delay = ms{pick(rng_)};
  }
  if (p_.deadline) {
    // A confirmation cut short by the try's bound: the holder is still there, so busy.
    if (now >= *p_.deadline) return fail(make_error_code(verifying_ ? errc::busy : errc::timeout));
    // A look that would leave less than the shortest wait before the deadline is likely cut short
    // there, and its reason ("in flight") would not be why the acquire failed: wait to the
    // deadline instead, and end there (on_timer). The cost: a lock freed in that last stretch is
    // not taken. The watched window below may still come first.
    const auto left = *p_.deadline - now;
    if (left - delay < p_.backoff_min) delay = left;
  }
  // Look again when the window we are watching ends, if sooner: the holder's, or, when the holder
  // is gone and another process heads the line, that head's (decide()). Not the holder's window
  // then: it has passed, and would cut every wait to zero, a read per round trip until the head
  // takes (docs/design.md section 7).
  const auto& watched = head_observer_.seen() ? head_observer_ : observer_;
  if (auto at = watched.expires_at()) delay = std::min(delay, std::max(*at - now, delay.zero()));
  acquire_action a{kind::wait_until};
  a.at = now + delay;
  return a;
}

// The token: above the document's (docs/design.md section 1), and above every take of ours
// abandoned in flight, whose late give-back by (owner, its token) must never match a lease this
// acquire gets; at least the wall clock's reading, so that a blind take's filter (token below
// ours) matches a document another process freed, and a new life of the document starts above
// the last one. Tokens are not consecutive: they need only increase.
acquire_action acquire_fsm::take_next(const lock_doc& observed, time_point now) {
  pending_observed_ = observed;
  std::int64_t above = observed.exists ? observed.held.token : 0;
  for (auto a : abandoned_) above = std::max(above, a);
  const auto token = next_token(above, clock_at(now));
  if (!token)
    return fail(make_error_code(errc::server_error),
                "lock '" + name_ + "' has token " + std::to_string(above) + ": no token is above it");
  return take(*token);
}

// token_clock() advanced by the boot clock since start(): the wall clock read once, as an input.
// No reading (0; token_clock() is at least 1): tokens go by one.
std::int64_t acquire_fsm::clock_at(time_point now) const {
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(now - started_).count();
  if (elapsed <= 0 || p_.token_clock == 0) return p_.token_clock;
  return p_.token_clock > token_clock_cap - elapsed ? token_clock_cap : p_.token_clock + elapsed;
}

acquire_action acquire_fsm::take(std::int64_t token) {
  pending_token_ = token;
  acquire_action a{kind::take};
  a.token = token;
  return a;
}

take_request acquire_fsm::request() const {
  take_request t;
  t.name = name_;
  t.owner = p_.owner;
  t.token = pending_token_;
  t.expiry = p_.expiry;
  t.observed = pending_observed_;
  t.nobody_waiting = nobody_waiting_;
  t.leaving = leaving_;
  return t;
}

// Past it a grant would leave the lease too little time to reach its first renewal.
acquire_fsm::time_point acquire_fsm::take_bound(time_point sent) const {
  return grant_bound(sent, p_.expiry, p_.margin, p_.refresh_every);
}

acquire_action acquire_fsm::on_take(const outcome<bool>& r, time_point sent, time_point now) {
  const bool first_look = std::exchange(looked_first_, false);
  if (!r.ec) {
    if (!r.value) {  // lost the race (E11000 or a swap that matched nothing): read again at once
      if (!first_look) ++lost_races_;  // the first blind take is a look: not taken is no lost race
      // A grouped take judged missed by a read (flagged ambiguous) may still have landed: the read
      // may show an older snapshot (a new primary, docs/design.md section 14). Its send is noted;
      // it costs at most a hand-off of the same token given back. So is a blind take's: its E11000
      // may be the driver's resend's, answered before the first attempt, held up on the way (a
      // router), lands on a later free state (section 4). Once per blind take: the first action, or
      // after a read that found no document. The server's own "matched nothing" for a swap is
      // certain, and noting every one would grow without bound in a long wait.
      if (r.ambiguous || !pending_observed_.exists) note_take_sent(pending_token_, sent);
      // A judged miss is of unknown outcome: given back once if the acquire ends without it, as
      // an abandoned take is (section 4; not the unconfirmed takes' retries, which would hold a
      // shutdown for seconds after every multi-lock look that found a member held). A blind
      // take's own miss is only noted: a give-back at the end of every acquire that found the lock
      // held would cost a command each for a resend held up on its way.
      if (r.ambiguous) add_once(judged_missed_, pending_token_);
      return read();
    }
    if (now < take_bound(sent)) return grant(pending_token_, sent);
    // Applied, but our own deadline for it has passed: a waiter may already count it expired.
    remember_unconfirmed(pending_token_);
    note_take_sent(pending_token_, sent);
    return give_back(pending_token_);
  }
  if (r.ec == aerr::operation_aborted || r.ec == errc::timeout) {
    // Abandoned (cancelled, or bounded by take_bound or the deadline): it may still land. The
    // driver gives it back when its late reply comes, but a process that ends first never sees
    // that reply, so it is also given back once as the acquire ends. A read showing it counts
    // from this send time at the latest (past its bound by then: given back, never granted).
    add_once(abandoned_, pending_token_);
    note_take_sent(pending_token_, sent);
    if (r.ec == aerr::operation_aborted || past_deadline(now)) return fail(r.ec, r.message);
    return read();
  }
  // Definitely not applied: no server (ride it out, then read), or refused.
  if (!r.ambiguous && r.ec == errc::server_unavailable) return no_server(sent, now, r.message);
  if (!r.ambiguous) return fail(r.ec, r.message);
  remember_unconfirmed(pending_token_);
  note_take_sent(pending_token_, sent);
  // A write-concern error: applied on the primary, but a failover may roll it back. Never a
  // grant (two holders with one token otherwise); the driver gives it back.
  if (r.ec == errc::ambiguous_result) return fail(r.ec, r.message + " (the take was given back)");
  return {kind::recheck};  // a stream error after sending: ask the server (majority read)
}

acquire_action acquire_fsm::give_back(std::int64_t token) {
  giving_back_ = token;
  add_once(given_back_, token);
  acquire_action a{kind::give_back};
  a.token = token;
  return a;
}

acquire_action acquire_fsm::on_given_back(const outcome<bool>& r, time_point now) {
  if (r.ec == aerr::operation_aborted) return fail(r.ec, r.message);
  if (!r.ec) forget_unconfirmed(giving_back_);  // freed (or never there): nothing left to give back
  if (p_.try_once)
    return fail(make_error_code(errc::timeout), "the server granted the lock too late to use it");
  if (past_deadline(now)) return fail(make_error_code(errc::timeout));
  return read();
}

void acquire_fsm::remember_unconfirmed(std::int64_t token) {
  add_once(unconfirmed_, token);
}

// Kept for the whole acquire, also after a give-back answered: a take still in flight then may
// land later, and a read showing it must count from its first send.
void acquire_fsm::note_take_sent(std::int64_t token, time_point sent) {
  for (auto& [t, at] : take_sent_)
    if (t == token) {
      at = std::min(at, sent);
      return;
    }
  take_sent_.emplace_back(token, sent);
}

std::optional<acquire_fsm::time_point> acquire_fsm::earliest_take_sent(std::int64_t token) const {
  for (const auto& [t, at] : take_sent_)
    if (t == token) return at;
  return std::nullopt;
}

void acquire_fsm::forget_unconfirmed(std::int64_t token) {
  std::erase(unconfirmed_, token);
  std::erase(abandoned_, token);
  std::erase(judged_missed_, token);
}

acquire_action acquire_fsm::grant(std::int64_t token, time_point clock_start) {
  left_with_take_ = std::any_of(leaving_.begin(), leaving_.end(), [&](const line_entry& e) { return e.owner == p_.owner; });
  // Any other unconfirmed take compared against a state that no longer exists: it cannot land.
  unconfirmed_.clear();
  abandoned_.clear();
  judged_missed_.clear();
  acquire_action a{kind::grant};
  a.token = token;
  a.at = clock_start;
  return a;
}

// A wait that reaches the deadline ends there: a read sent now would be cut short at once, and
// its reason ("in flight") would not be why the acquire failed. A confirmation cut short by a
// try's bound leaves the holder there: busy.
acquire_action acquire_fsm::on_timer(time_point now) {
  if (past_deadline(now)) return fail(make_error_code(verifying_ ? errc::busy : errc::timeout), unreachable_reason(now));
  if (auto token = std::exchange(give_back_after_wait_, std::nullopt)) return give_back(*token);
  return read();
}

// The backoff's next delay, cut at the deadline: a wait that watches no window.
acquire_action acquire_fsm::wait_at_most_until_deadline(time_point now) {
  acquire_action a{kind::wait_until};
  a.at = now + wait_.next(rng_);
  if (p_.deadline) a.at = std::min(a.at, *p_.deadline);
  return a;
}

acquire_action acquire_fsm::on_cancel() { return fail(aerr::operation_aborted); }

}  // namespace mongolock::detail
