// A lease's release: to the head of its line, to a local waiter, or plainly (docs/design.md
// sections 7 and 8).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <limits>

#include "engine/lease_state.hpp"

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
  ~turn_after_release() { st->pass_turn(); }
};

// A release that matched nothing. If the document is free at our own token, nobody held it
// after us: this was our own earlier attempt (the driver retries a write whose reply was lost)
// or an operator's force release, and the lock is free: released. Otherwise someone else held
// it: lost.
// `seen`: the majority read already made, if any.
asio::awaitable<std::tuple<error_code>> settle_matched_nothing(std::shared_ptr<lease_state> st, diagnostics* d,
                                                               std::optional<outcome<lock_doc>> seen = std::nullopt) {
  auto p = st->prov;
  store_call<outcome<lock_doc>> look = [p, n = st->name](auto reply) {
    p->store->read(n, read_mode::majority, std::move(reply));
  };
  if (!seen) {
    auto fresh = co_await p->call<outcome<lock_doc>>(std::move(look), nullptr, std::nullopt, asio::use_awaitable);
    seen = std::move(fresh);
  }
  const auto& now = *seen;
  if (now.ec)
    co_return settle(*st, d, make_error_code(errc::ambiguous_result),
                     "the release matched nothing and the re-read failed: " + now.message);
  const bool free_at_ours = now.value.held.owner.empty() && now.value.held.token == st->token;
  if (free_at_ours) co_return settle(*st, d, error_code{}, "");
  co_return settle(*st, d, make_error_code(errc::lease_lost),
                   "another owner held the lock since (latest fencing token " + std::to_string(now.value.held.token) + ")");
}

asio::awaitable<std::tuple<error_code>> plain_release(std::shared_ptr<lease_state> st, diagnostics* d);

// The first parked acquire of this lease's name, if this lease holds the name's turn and its
// token can go up by one within its epoch. It stays parked (its deadline and cancellation keep
// working) until the hand-off has landed.
std::shared_ptr<parked_acquire> hand_over_candidate(lease_state& st) {
  if ((st.token & token_low_mask) == token_low_mask) return nullptr;  // a new epoch: the usual way
  if (st.others_in_line) return nullptr;  // the line comes first: the hand-off would not match
  if (!st.turn_held) return nullptr;
  return st.prov->turns.first(st.name);
}

asio::awaitable<std::tuple<error_code>> hand_over(std::shared_ptr<lease_state> st, std::shared_ptr<parked_acquire> next,
                                                  diagnostics* d, bool may_retry);

// After a hand-off that matched nothing: the line changed since this lease last saw it (someone
// joined or left), or the lease no longer holds the lock. A majority read tells which; if it is
// still ours, release again against what the read shows (once), else settle as a release that
// matched nothing.
asio::awaitable<std::tuple<error_code>> release_again(std::shared_ptr<lease_state> st, diagnostics* d);

// A hand-off that matched nothing: look and hand over again against what the read shows (once),
// else release plainly.
asio::awaitable<std::tuple<error_code>> after_a_miss(std::shared_ptr<lease_state> st, diagnostics* d, bool may_retry) {
  if (may_retry) {
    auto again = release_again(st, d);
    co_return co_await std::move(again);
  }
  st->others_in_line = true;
  auto plain = plain_release(st, d);
  co_return co_await std::move(plain);
}

// Hand-off to the head of the line (docs/design.md section 7): one update,
// matched on this lease's (owner, token) and on the head's entry, names the head's owner id with
// token + 1 and removes its entry. The head finds itself the holder at its next (majority) read;
// its clock starts at its last write of that entry, which the hand-off came after. If a parked
// acquire of this provider waits for the name, the same update puts it in line (the next ticket,
// as last seen), so the lock comes back without a read and a join.
asio::awaitable<std::tuple<error_code>> hand_to_line(std::shared_ptr<lease_state> st, diagnostics* d, bool may_retry) {
  auto p = st->prov;
  if ((st->token & token_low_mask) == token_low_mask) {  // token + 1 would need a new epoch: the usual way
    auto plain = plain_release(st, d);
    co_return co_await std::move(plain);
  }
  const line_entry head = st->line_seen.front();
  auto local = st->turn_held ? p->turns.first(st->name) : nullptr;
  take_request t;
  t.name = st->name;
  t.owner = head.owner;
  t.token = st->token + 1;
  t.expiry = st->expiry();  // the head's first deadline allows for a shorter one than its own
  t.observed.exists = true;
  t.observed.held.owner = st->owner;
  t.observed.held.token = st->token;
  t.hand_over = true;
  t.leaving.push_back(head);
  const auto sent = boot_clock::now();
  std::optional<line_enrollment> enrolled;
  if (local && st->tickets_seen >= 0 && st->tickets_seen < std::numeric_limits<std::int64_t>::max()) {
    enrolled = line_enrollment{new_owner_id(), st->tickets_seen, sent};
    t.enroll = line_entry{enrolled->owner, enrolled->ticket};
  }
  store_call<outcome<bool>> call = [p, t](auto reply) { p->store->take(t, std::move(reply)); };
  auto r = co_await p->call<outcome<bool>>(std::move(call), nullptr, std::nullopt, asio::use_awaitable);
  if (!r.ec && r.value) {
    p->count.releases.fetch_add(1, std::memory_order_relaxed);
    auto first = st->turn_held.exchange(false) ? p->turns.pass(st->name) : nullptr;
    if (enrolled && first == local) first->enrolled = std::move(enrolled);
    else if (enrolled) leave_line_in_background(p, st->name, enrolled->owner);  // it left meanwhile
    if (first) resume_parked(p, std::move(first));
    co_return settle(*st, d, error_code{}, "");
  }
  if (!r.ec) {
    auto next = after_a_miss(st, d, may_retry);
    co_return co_await std::move(next);
  }
  // The hand-off may have landed: then the head may already hold the lock (once committed, its
  // majority read shows it), so the head's lock is never freed from here. Ours is, in case it did
  // not land (the owner filter makes that harmless if it did); so is the enrolled entry.
  if (enrolled) leave_line_in_background(p, st->name, enrolled->owner);
  p->release_in_background(st->name, st->owner, st->token);
  co_return settle(*st, d, r.ambiguous ? make_error_code(errc::ambiguous_result) : r.ec,
                   "the hand-off to the next in line failed (" + r.message + "); the release is retried in the background");
}

// The release as far as this lease knows the document: to the head of the line if it saw one,
// else to the next local waiter, else plainly. `may_retry`: a hand-off that misses reads and
// comes back here once.
asio::awaitable<std::tuple<error_code>> release_as_seen(std::shared_ptr<lease_state> st, diagnostics* d, bool may_retry) {
  if (!st->line_seen.empty()) {
    auto handed = hand_to_line(st, d, may_retry);
    co_return co_await std::move(handed);
  }
  if (auto next = hand_over_candidate(*st)) {
    auto handed = hand_over(st, std::move(next), d, may_retry);
    co_return co_await std::move(handed);
  }
  auto plain = plain_release(st, d);
  co_return co_await std::move(plain);
}

asio::awaitable<std::tuple<error_code>> release_again(std::shared_ptr<lease_state> st, diagnostics* d) {
  auto p = st->prov;
  store_call<outcome<lock_doc>> look = [p, n = st->name](auto reply) {
    p->store->read(n, read_mode::majority, std::move(reply));
  };
  auto now = co_await p->call<outcome<lock_doc>>(std::move(look), nullptr, std::nullopt, asio::use_awaitable);
  const bool ours = !now.ec && now.value.held.owner == st->owner && now.value.held.token == st->token;
  if (now.ec) p->release_in_background(st->name, st->owner, st->token);  // it may still be ours
  if (!ours) {
    auto rest = settle_matched_nothing(st, d, std::move(now));
    co_return co_await std::move(rest);
  }
  st->line_seen.clear();
  for (auto& e : now.value.line)
    if (e.owner != st->owner) st->line_seen.push_back(e);
  st->tickets_seen = now.value.tickets;
  st->others_in_line = now.value.waiting > 0 || !st->line_seen.empty();
  auto release = release_as_seen(st, d, false);
  co_return co_await std::move(release);
}

// Local hand-off (docs/design.md section 7): release this lease and take the lock for `next` in one
// update, matched on this lease's (owner, token). The guarded work was cancelled before this is
// sent; the new holder's clock starts at the send time, as for any take, and a reply after its
// own bound (sent + expiry - margin) is given back, never handed out. Nothing is granted on an
// error: a write-concern error may be rolled back, a lost reply may or may not have landed.
asio::awaitable<std::tuple<error_code>> hand_over(std::shared_ptr<lease_state> st, std::shared_ptr<parked_acquire> next,
                                                  diagnostics* d, bool may_retry) {
  auto p = st->prov;
  const lock_options& o = next->timing ? *next->timing : p->opts;
  take_request t;
  t.name = st->name;
  t.owner = new_owner_id();
  t.token = st->token + 1;
  t.expiry = o.expiry;
  t.observed.exists = true;
  t.observed.held.owner = st->owner;
  t.observed.held.token = st->token;
  t.meta = p->meta;
  t.hand_over = true;
  // a process waiting in the lock's line comes first (docs/design.md section 7)
  t.nobody_waiting = true;
  const auto sent = boot_clock::now();
  const auto bound = sent + o.expiry - o.effective_margin();
  store_call<outcome<bool>> call = [p, t](auto reply) { p->store->take(t, std::move(reply)); };
  auto r = co_await p->call<outcome<bool>>(std::move(call), nullptr, std::nullopt, asio::use_awaitable);
  if (!r.ec && r.value) {
    p->count.releases.fetch_add(1, std::memory_order_relaxed);
    // The turn goes to whoever is first in line now: `next`, unless it timed out or was
    // cancelled meanwhile (then the lock taken for it is given back).
    auto first = st->turn_held.exchange(false) ? p->turns.pass(st->name) : nullptr;
    if (first == next && boot_clock::now() < bound) {
      grant_handed_over(p, std::move(first), t.owner, t.token, sent, bound);
    } else {  // a late grant (its deadline has passed), or its acquire is gone
      p->release_in_background(t.name, t.owner, t.token);
      if (first) resume_parked(p, std::move(first));
    }
    co_return settle(*st, d, error_code{}, "");
  }
  // Otherwise the turn passes on (next_turn in release()) once this release has answered.
  if (!r.ec) {  // someone joined the lock's line, or this lease no longer holds it
    auto next = after_a_miss(st, d, may_retry);
    co_return co_await std::move(next);
  }
  // Either may hold the lock now: the hand-off if it landed, this lease if it did not. Both are
  // released in the background (the owner filters make that harmless).
  if (r.ambiguous) p->release_in_background(t.name, t.owner, t.token, {}, true);
  p->release_in_background(st->name, st->owner, st->token);
  co_return settle(*st, d, r.ambiguous ? make_error_code(errc::ambiguous_result) : r.ec,
                   "the hand-off to the next local waiter failed (" + r.message + "); the release is retried in the background");
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
  auto release = release_as_seen(st, d, true);
  co_return co_await std::move(release);
}

namespace {
asio::awaitable<std::tuple<error_code>> plain_release(std::shared_ptr<lease_state> st, diagnostics* d) {
  auto p = st->prov;
  store_call<outcome<bool>> call = [p, n = st->name, o = st->owner, t = st->token](auto reply) {
    p->store->release(n, o, t, std::move(reply));
  };
  auto r = co_await p->call<outcome<bool>>(std::move(call), nullptr, std::nullopt, asio::use_awaitable);
  if (r.ec && r.ambiguous) {
    // The release may have been applied. Not a loss: say so, and keep trying in the background
    // (the owner filter makes a repeat harmless).
    p->release_in_background(st->name, st->owner, st->token);
    co_return settle(*st, d, make_error_code(errc::ambiguous_result),
                     r.message + "; the release is retried in the background");
  }
  if (r.ec) co_return settle(*st, d, r.ec, r.message + "; the lock expires on its own");
  p->count.releases.fetch_add(1, std::memory_order_relaxed);
  if (r.value) {
    // The next acquire here swaps against this document without reading first, unless others
    // wait in line (its swap would not match: it reads and joins instead).
    if (!st->others_in_line) p->remember_free(st->name, st->released_doc());
    co_return settle(*st, d, error_code{}, "");
  }
  auto rest = settle_matched_nothing(st, d);
  co_return co_await std::move(rest);
}
}  // namespace

}  // namespace mongolock::detail
