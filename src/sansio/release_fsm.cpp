#include "sansio/release_fsm.hpp"

#include <limits>
#include <utility>

#include "mongolock/error.hpp"

namespace mongolock::detail {

using boost::system::error_code;

namespace {
release_action act(release_action::kind k) {
  release_action a;
  a.what = k;
  return a;
}
release_action done(error_code ec, std::string why) {
  auto a = act(release_action::kind::done);
  a.ec = ec;
  a.why = std::move(why);
  return a;
}
error_code failed(const outcome<bool>& r) { return r.ambiguous ? make_error_code(errc::ambiguous_result) : r.ec; }
// An event the machine did not ask for (a driver's mistake): settle, and give our lease back in
// case it is still held, rather than leave it to expire.
release_action misused(std::string why) {
  auto a = done(make_error_code(boost::system::errc::invalid_argument), std::move(why));
  a.give_back_own = true;
  return a;
}
}  // namespace

release_fsm::release_fsm(release_params p) : p_(std::move(p)) {}

release_action release_fsm::resume(const release_input& in) {
  switch (in.what) {
    case release_input::kind::start: return start(in.local);
    case release_input::kind::written: return on_written(in.wrote, in.sent, in.now);
    case release_input::kind::read: return on_read(in.doc, in.local);
  }
  return misused("release: an input of no known kind");
}

release_action release_fsm::start(const std::optional<local_waiter>& local) { return decide(local); }

// The release as far as this lease knows the document: to the head of the line if it saw one,
// else to the next local waiter, else plainly.
release_action release_fsm::decide(const std::optional<local_waiter>& local) {
  if (!p_.line_seen.empty()) return hand_to_line(local);
  // A local hand-off needs nobody else in line (the line comes first: its update requires an
  // empty line and would not match) and a token above ours.
  if (local && !p_.others_in_line && !token_full()) return hand_over(*local);
  return plain();
}

take_request release_fsm::handing(std::string owner, std::chrono::milliseconds expiry) const {
  take_request t;
  t.name = p_.name;
  t.owner = std::move(owner);
  t.token = p_.token + 1;
  t.expiry = expiry;
  t.observed.exists = true;
  t.observed.held.owner = p_.owner;
  t.observed.held.token = p_.token;
  t.hand_over = true;
  return t;
}

// Hand-off to the head of the line (docs/design.md section 7): one update, matched on this
// lease's (owner, token) and on the head's entry, names the head's owner id with token + 1 and
// removes its entry. The head's first deadline allows for this lease's expiry when it is shorter
// than its own. If a local acquire waits, the same update puts it in line with the next ticket as
// last seen.
release_action release_fsm::hand_to_line(const std::optional<local_waiter>& local) {
  if (token_full()) return plain();  // nothing above it: a document written by something else
  const line_entry head = p_.line_seen.front();
  request_ = handing(head.owner, p_.expiry);
  request_.leaving.push_back(head);
  if (local && p_.tickets_seen >= 0 && p_.tickets_seen < std::numeric_limits<std::int64_t>::max())
    request_.enroll = line_entry{local->owner, p_.tickets_seen};
  step_ = step::to_line;
  return act(release_action::kind::hand_to_line);
}

// Local hand-off (docs/design.md section 7): release this lease and take the lock for the local
// waiter in one update, matched on this lease's (owner, token) and on an empty line.
release_action release_fsm::hand_over(const local_waiter& local) {
  request_ = handing(local.owner, local.expiry);
  request_.nobody_waiting = true;
  local_expiry_ = local.expiry;
  local_margin_ = local.margin;
  local_renew_every_ = local.renew_every;
  step_ = step::to_local;
  return act(release_action::kind::hand_over);
}

release_action release_fsm::plain() {
  step_ = step::plain;
  return act(release_action::kind::release);
}

// A hand-off that matched nothing: the line changed since this lease saw it (someone joined or
// left), or the lease no longer holds the lock. The first time, a majority read tells which; the
// second time, the release is plain.
release_action release_fsm::after_a_miss() {
  if (may_retry_) {
    may_retry_ = false;
    step_ = step::reread;
    return act(release_action::kind::read);
  }
  p_.others_in_line = true;
  return plain();
}

release_action release_fsm::on_written(const outcome<bool>& r, time_point sent, time_point now) {
  switch (step_) {
    case step::to_line: return on_handed_to_line(r);
    case step::to_local: return on_handed_over(r, sent, now);
    case step::plain: return on_released(r);
    default: return misused("release: a write's reply with none in flight");
  }
}

release_action release_fsm::on_handed_to_line(const outcome<bool>& r) {
  if (!r.ec && r.value) {
    auto a = done({}, "");
    a.count_release = true;
    a.to = release_action::handed::to_line;
    return a;
  }
  if (!r.ec) return after_a_miss();
  // The hand-off may have landed: then the head may hold the lock already (once committed, its
  // majority read shows it), so the head's lock is never freed from here. Ours is, in case it did
  // not land (the owner filter makes that harmless if it did); so is the enrolled entry.
  auto a = done(failed(r), "the hand-off to the next in line failed (" + r.message +
                               "); the release is retried in the background");
  a.leave_enrolled = request_.enroll.has_value();
  a.give_back_own = true;
  return a;
}

release_action release_fsm::on_handed_over(const outcome<bool>& r, time_point sent, time_point now) {
  if (!r.ec && r.value) {
    auto a = done({}, "");
    a.count_release = true;
    a.to = release_action::handed::to_local;
    a.late = now >= bound(sent);  // the new holder's own deadline may already have passed
    return a;
  }
  if (!r.ec) return after_a_miss();  // someone joined the line, or this lease no longer holds it
  // Either may hold the lock now: the hand-off if it landed, this lease if it did not. Both are
  // given back (the owner filters make that harmless).
  auto a = done(failed(r), "the hand-off to the next local waiter failed (" + r.message +
                               "); the release is retried in the background");
  a.give_back_handed = r.ambiguous;
  a.give_back_own = true;
  return a;
}

release_action release_fsm::on_released(const outcome<bool>& r) {
  if (r.ec && r.ambiguous) {
    // It may have been applied. Not a loss: say so, and keep trying in the background (the
    // owner filter makes a repeat harmless).
    auto a = done(make_error_code(errc::ambiguous_result), r.message + "; the release is retried in the background");
    a.give_back_own = true;
    return a;
  }
  if (r.ec) return done(r.ec, r.message + "; the lock expires on its own");
  if (r.value) {
    auto a = done({}, "");
    a.count_release = true;
    return a;
  }
  auto a = act(release_action::kind::read);
  a.count_release = true;
  step_ = step::settle_read;
  return a;
}

release_action release_fsm::on_read(const outcome<lock_doc>& r, const std::optional<local_waiter>& local) {
  if (step_ == step::settle_read) return settle_matched_nothing(r);
  if (step_ != step::reread) return misused("release: a read with none in flight");
  const bool ours = !r.ec && r.value.held.owner == p_.owner && r.value.held.token == p_.token;
  if (!ours) {
    auto a = settle_matched_nothing(r);
    // Unread: it may still be ours. Below our token: a majority snapshot older than our own take
    // (after a failover, docs/design.md section 3), which says nothing of the state now: ours,
    // unrenewed, unless freed (a release by (owner, token) is harmless if it has moved on).
    a.give_back_own = a.give_back_own || r.ec.failed() || (r.value.exists && r.value.held.token < p_.token);
    return a;
  }
  // Still ours: release again against what the read shows.
  p_.line_seen.clear();
  for (const auto& e : r.value.line)
    if (e.owner != p_.owner) p_.line_seen.push_back(e);
  p_.tickets_seen = r.value.tickets;
  p_.others_in_line = r.value.waiting > 0 || !p_.line_seen.empty();
  return decide(local);
}

// A release that matched nothing. If the document is free at our own token, nobody held it after
// us: this was our own earlier attempt (the driver retries a write whose reply was lost) or an
// operator's force release, and the lock is free: released. Otherwise someone else held it: lost.
release_action release_fsm::settle_matched_nothing(const outcome<lock_doc>& r) {
  step_ = step::idle;
  if (r.ec)
    return done(make_error_code(errc::ambiguous_result), "the release matched nothing and the re-read failed: " + r.message);
  if (r.value.held.owner.empty() && r.value.held.token == p_.token) return done({}, "");
  return done(make_error_code(errc::lease_lost),
              "another owner held the lock since (latest fencing token " + std::to_string(r.value.held.token) + ")");
}

}  // namespace mongolock::detail
