// Hand-off to the line (docs/design.md section 7): a release hands the lock to the head of the
// lock's line (another process) in the same update, and may put its own next waiter in line with
// it. The head's clock starts at its last write of its entry (docs/design.md section 7). The FSM
// rules without I/O, then two providers (two processes, as far as the lock goes) on the in-memory
// store, where every command is counted and can be broken.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "sansio/acquire_fsm.hpp"
#include "engine_harness.hpp"
#include "fsm_params.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...
using namespace test::line_world;

namespace {

ml::detail::acquire_params params() {
  auto p = test::fsm_params(t0, me);
  p.refresh_every = 300ms;
  return p;
}

// An FSM in line with ticket 7, its join sent at t0 + 10 ms.
acquire_fsm joined() {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc(other, {}, 7)), t0));
  BOOST_REQUIRE((a.what == kind::join));
  a = f.resume(acquire_input::joined(ml::detail::success(true), t0 + 10ms, t0 + 12ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  return f;
}

// A lock handed to us by the holder of line_doc's token 5: the hand-off writes 5 + 1.
lock_doc handed(std::int64_t tickets, std::chrono::milliseconds expiry = 1000ms) {
  auto d = line_doc(me, {}, tickets, expiry);
  d.held.token = 6;
  return d;
}

// `f` takes a free document at token 7 with 8 and hears "not taken": judged missed by the read after
// a grouped command (flagged ambiguous: that read may predate the command), or the server's own miss.
void missed_take(acquire_fsm& f, bool judged) {
  f.resume(acquire_input::start(t0));
  BOOST_REQUIRE((f.resume(acquire_input::read(seen(free_doc(7)), t0)).what == kind::take));
  auto missed = ml::detail::success(false);
  missed.ambiguous = judged;
  BOOST_REQUIRE((f.resume(acquire_input::take(missed, t0, t0 + 5ms)).what == kind::read));
}

std::size_t count_since(engine& e, std::size_t from, op what) { return calls_since(e, from, what).size(); }

// Waits until `name`'s line has `n` entries.
void until_in_line(engine& e, const std::string& name, std::size_t n) {
  BOOST_REQUIRE(run_until(e, [&] { return e.store->get(name).line.size() == n; }, 2s));
}

using provider_ptr = std::shared_ptr<ml::detail::provider_impl>;

// `holder` comes to hold `name` by a take that sees the line behind it: the engine's own provider
// holds first, `holder` joins the line, then `line_up()` adds `behind` more entries; the engine's
// plain release leaves the lock free for `holder`, the head, to take.
ml::lease hold_with_line(engine& e, const std::string& name, const provider_ptr& holder, std::size_t behind,
                         const std::function<void()>& line_up) {
  auto [ec, setup] = e.acquire(name, 1s);
  BOOST_REQUIRE(!ec);
  auto mine = wait_for_lock(holder, name);
  until_in_line(e, name, 1);
  line_up();
  until_in_line(e, name, 1 + behind);
  BOOST_REQUIRE(!e.release(setup));
  BOOST_REQUIRE(run_until(e, [&] { return mine->done; }, 2s));
  BOOST_REQUIRE_MESSAGE(!mine->ec, mine->ec.message());
  BOOST_REQUIRE(e.store->get(name).line.size() == behind);
  return std::move(mine->held);
}

// Another provider's waiter (theirs) at the head of the line behind a lease of `us` (first), and
// a waiter of `us` (ours) parked behind that lease's turn.
struct both_waiting {
  provider_ptr us, them;
  std::shared_ptr<waiter> theirs, ours;
  ml::lease first;
};
both_waiting with_both_waiting(engine& e, const std::string& name) {
  both_waiting b{other_provider(e), other_provider(e), nullptr, nullptr, {}};
  b.first = hold_with_line(e, name, b.us, 1, [&] { b.theirs = wait_for_lock(b.them, name); });
  b.ours = wait_for_lock(b.us, name);  // parked behind `first`'s turn
  e.run_for(30ms);
  return b;
}

// A lock handed to `them` from the line by `us`'s release, `wait` after the setup that put
// `them` in line: whether `them` then kept it past the deadline it started with (`keep`; a
// renewal in time). Leases of seconds, so that a stalled run (TSan stops every thread for up to
// 0.9 s) neither gives the hand-off back nor loses the lease after it.
void hand_over_and_keep(const std::string& name, ml::lock_options ours, ml::lock_options theirs_opts,
                        std::chrono::milliseconds wait, std::chrono::milliseconds keep) {
  engine e;
  auto us = other_provider(e, ours), them = other_provider(e, theirs_opts);
  std::shared_ptr<waiter> theirs;
  auto first = hold_with_line(e, name, us, 1, [&] { theirs = wait_for_lock(them, name); });
  e.run_for(wait);
  const auto before = e.store->calls().size();
  BOOST_TEST(!e.release(first));
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 5s));
  BOOST_REQUIRE_MESSAGE(!theirs->ec, theirs->ec.message());
  BOOST_TEST(count_since(e, before, op::take) == 1u, "the hand-off was used");
  e.run_for(keep);
  BOOST_TEST(theirs->held.held(), "the handed lease is still held: " << theirs->held.status().message());
  BOOST_TEST(them->count.losses.load() == 0u);
  BOOST_TEST(them->count.renewals.load() >= 1u);
  BOOST_TEST(!e.release(theirs->held));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(line_handoff_suite)

// The clock of a lock handed to us starts at our last write of the entry (the join), never at
// the read that found it: the hand-off came after that write and before that read.
BOOST_AUTO_TEST_CASE(a_handed_lock_starts_its_clock_at_the_join) {
  auto f = joined();
  auto a = f.resume(acquire_input::timer(t0 + 100ms));
  BOOST_REQUIRE((a.what == kind::read));
  BOOST_TEST((f.read_mode_now() == ml::detail::read_mode::majority), "a committed hand-off only");
  a = f.resume(acquire_input::read(seen(handed(8)), t0 + 400ms));
  BOOST_REQUIRE((a.what == kind::grant));
  BOOST_TEST((a.at == t0 + 10ms));
  BOOST_TEST(f.left_line_with_take(), "the hand-off removed the entry: nothing to leave");
}

// A refresh that matched moves the start to its send time; the releaser's shorter expiry pulls
// the first deadline in by the difference; past the deadline it is given back, never granted.
BOOST_AUTO_TEST_CASE(a_refresh_moves_the_start_and_a_shorter_expiry_or_a_late_read_is_honoured) {
  auto f = joined();
  auto a = f.resume(acquire_input::read(seen(line_doc(other, {{me, 7}}, 8)), t0 + 320ms));
  BOOST_REQUIRE((a.what == kind::refresh));
  BOOST_TEST(f.line_ticket() == 7);
  a = f.resume(acquire_input::refreshed(ml::detail::success(true), t0 + 330ms, t0 + 335ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  // Not again until a period after that refresh.
  BOOST_TEST((f.resume(acquire_input::read(seen(line_doc(other, {{me, 7}}, 8)), t0 + 600ms)).what == kind::wait_until));
  BOOST_REQUIRE((f.resume(acquire_input::timer(t0 + 650ms)).what == kind::read));
  a = f.resume(acquire_input::read(seen(handed(8, 800ms)), t0 + 700ms));
  BOOST_REQUIRE((a.what == kind::grant));
  BOOST_TEST((a.at == t0 + 330ms - 200ms), "expiry 800 written by the releaser against our 1000");

  auto late = joined();
  BOOST_REQUIRE((late.resume(acquire_input::timer(t0 + 900ms)).what == kind::read));
  // At start + E - m - min(m, E - m - R, (E - m) / 4): too little left for the first renewal to go out and back.
  a = late.resume(acquire_input::read(seen(handed(8)), t0 + 10ms + 800ms));
  BOOST_TEST((a.what == kind::give_back));
}

// A take abandoned in flight (its bound passed) says nothing about a later hand-off from the line:
// that state carries the releaser's token + 1, which only the hand-off can have written, so its
// clock starts at our entry write. Before, the abandoned take's send started it, and every later
// hand-off of the acquire was judged from that old send and given back.
BOOST_AUTO_TEST_CASE(an_abandoned_take_does_not_age_a_later_hand_off) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(free_doc(7)), t0));
  BOOST_REQUIRE((a.what == kind::take && a.token == 8));
  ml::detail::outcome<bool> timed_out;
  timed_out.ec = ml::make_error_code(ml::errc::timeout);
  BOOST_REQUIRE((f.resume(acquire_input::take(timed_out, t0, t0 + 800ms)).what == kind::read));
  auto taken = line_doc(other, {}, 7);  // another waiter took it meanwhile
  taken.held.token = 9;
  BOOST_REQUIRE((f.resume(acquire_input::read(seen(taken), t0 + 800ms)).what == kind::join));
  BOOST_REQUIRE((f.resume(acquire_input::joined(ml::detail::success(true), t0 + 810ms, t0 + 812ms))
      .what == kind::wait_until));
  BOOST_REQUIRE((f.resume(acquire_input::timer(t0 + 1000ms)).what == kind::read));
  auto handed = line_doc(me, {}, 8);
  handed.held.token = 10;
  a = f.resume(acquire_input::read(seen(handed), t0 + 1000ms));
  BOOST_TEST((a.what == kind::grant), "granted, not given back");
  BOOST_TEST((a.at == t0 + 810ms), "the clock starts at the join");
  // The abandoned take's own token, should it land: still never granted, even read before its
  // bound (t0 + 800 ms).
  acquire_fsm g("x", params());
  g.resume(acquire_input::start(t0));
  g.resume(acquire_input::read(seen(free_doc(7)), t0));
  BOOST_REQUIRE((g.resume(acquire_input::take(timed_out, t0, t0 + 500ms)).what == kind::read));
  auto landed = line_doc(me, {}, 0);
  landed.held.token = 8;
  BOOST_TEST((g.resume(acquire_input::read(seen(landed), t0 + 600ms)).what == kind::give_back));
}

// A take judged missed by the read after a grouped command (flagged ambiguous: the read may show an
// older snapshot) may have landed, so a state with its token counts from its send; the server's
// own "matched nothing" is certain, and the same state then counts from the entry write (a
// hand-off that gave the releaser's token + 1 the same value).
BOOST_AUTO_TEST_CASE(a_take_judged_missed_by_a_read_still_ages_its_token) {
  for (const bool judged : {true, false}) {
    acquire_fsm f("x", params());
    missed_take(f, judged);
    auto held = line_doc(other, {}, 7);
    held.held.token = 7;
    BOOST_REQUIRE((f.resume(acquire_input::read(seen(held), t0 + 700ms)).what == kind::join));
    BOOST_REQUIRE((f.resume(acquire_input::joined(ml::detail::success(true), t0 + 710ms, t0 + 712ms))
        .what == kind::wait_until));
    BOOST_REQUIRE((f.resume(acquire_input::timer(t0 + 850ms)).what == kind::read));
    auto ours = line_doc(me, {}, 8);
    ours.held.token = 8;  // the missed take's token
    const auto a = f.resume(acquire_input::read(seen(ours), t0 + 850ms));  // past t0's bound (t0 + 800 ms)
    if (judged) BOOST_TEST((a.what == kind::give_back), "judged by a read: counts from the take's send");
    else BOOST_TEST((a.what == kind::grant && a.at == t0 + 710ms), "the server's miss: from the join");
  }
}

// A take judged missed by a read may have landed all the same: when the acquire ends before a
// read shows it, it is given back as every take of unknown outcome is. The server's own "matched
// nothing" is certain: nothing to give back.
BOOST_AUTO_TEST_CASE(a_take_judged_missed_is_given_back_when_the_acquire_ends) {
  for (const bool judged : {true, false}) {
    acquire_fsm f("x", params());
    missed_take(f, judged);
    BOOST_REQUIRE((f.resume(acquire_input::cancel()).what == kind::fail));
    const bool listed = std::ranges::find(f.judged_missed(), 8) != f.judged_missed().end();
    BOOST_TEST(listed == judged, (judged ? "judged by a read" : "the server's miss"));
    BOOST_TEST(f.unconfirmed().empty(), "once, not the unconfirmed takes' retries");
  }
}

// A majority read after a failover may come from a snapshot older than states already read
// (docs/design.md section 3): a hand-off read too late and given back, then shown again by such a
// read after the acquire joined the line anew, is not ours, whatever the new entry's clock says.
BOOST_AUTO_TEST_CASE(a_hand_off_given_back_is_never_granted_from_a_stale_read) {
  auto f = joined();  // join sent at t0 + 10 ms
  BOOST_REQUIRE((f.resume(acquire_input::timer(t0 + 900ms)).what == kind::read));
  auto handed = line_doc(me, {}, 8);
  handed.held.token = 6;
  auto a = f.resume(acquire_input::read(seen(handed), t0 + 900ms));  // past the join's bound
  BOOST_REQUIRE((a.what == kind::give_back && a.token == 6));
  BOOST_REQUIRE((f.resume(acquire_input::given_back(ml::detail::success(true), t0 + 905ms)).what == kind::read));
  auto taken = line_doc(other, {}, 8);  // another process's blind take over the freed (null, 6)
  taken.held.token = 9;
  BOOST_REQUIRE((f.resume(acquire_input::read(seen(taken), t0 + 910ms)).what == kind::join));
  a = f.resume(acquire_input::joined(ml::detail::success(true), t0 + 920ms, t0 + 922ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::read));
  a = f.resume(acquire_input::read(seen(handed), a.at + 1ms));  // a stale snapshot of the hand-off
  BOOST_TEST((a.what != kind::grant), "a token this acquire gave back");
  BOOST_TEST((a.what == kind::wait_until), "given back already: wait before giving it back again");
  a = f.resume(acquire_input::timer(a.at));
  BOOST_TEST((a.what == kind::give_back && a.token == 6), "harmless if stale; frees it if restored");
}

// An operator's force release keeps the token: (forced, 6) after a hand-off (me, 6) we never read.
// A stale snapshot showing the hand-off after we joined again is older than the placeholder.
BOOST_AUTO_TEST_CASE(a_hand_off_older_than_a_force_release_at_its_token_is_never_granted) {
  auto f = joined();  // join at t0 + 10 ms
  BOOST_REQUIRE((f.resume(acquire_input::timer(t0 + 100ms)).what == kind::read));
  auto forced = line_doc(ml::detail::broken_owner, {}, 8);
  forced.held.token = 6;
  forced.held.beat = 2;
  BOOST_REQUIRE((f.resume(acquire_input::read(seen(forced), t0 + 100ms)).what == kind::join));
  auto a = f.resume(acquire_input::joined(ml::detail::success(true), t0 + 110ms, t0 + 112ms));
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::read));
  auto handed = line_doc(me, {}, 8);
  handed.held.token = 6;
  a = f.resume(acquire_input::read(seen(handed), a.at + 1ms));
  BOOST_TEST((a.what != kind::grant), "granted at the new join's send");
}

// The same with a hand-off the acquire never saw: a state below a token already read is older than
// it, so an entry written since cannot have been the one that hand-off consumed. It is given back
// once (a state that old cannot be current within one life; if it were, that frees it).
BOOST_AUTO_TEST_CASE(a_state_older_than_one_already_read_is_never_granted) {
  auto f = joined();
  auto taken = line_doc(other, {}, 8);  // our entry went meanwhile (a hand-off we missed, taken over)
  taken.held.token = 9;
  BOOST_REQUIRE((f.resume(acquire_input::timer(t0 + 100ms)).what == kind::read));
  BOOST_REQUIRE((f.resume(acquire_input::read(seen(taken), t0 + 100ms)).what == kind::join));
  auto a = f.resume(acquire_input::joined(ml::detail::success(true), t0 + 110ms, t0 + 112ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::read));
  auto handed = line_doc(me, {}, 8);
  handed.held.token = 6;
  const auto stale_at = a.at + 1ms;
  a = f.resume(acquire_input::read(seen(handed), stale_at));
  BOOST_TEST((a.what == kind::give_back && a.token == 6), "token 6 after token 9: a stale snapshot, never granted");
  // Given back (harmless: the document has moved on, the filter matches nothing), then seen again: left alone.
  BOOST_REQUIRE((f.resume(acquire_input::given_back(ml::detail::success(false), stale_at + 1ms)).what == kind::read));
  a = f.resume(acquire_input::read(seen(handed), stale_at + 2ms));
  BOOST_TEST((a.what == kind::wait_until));
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::give_back));
  BOOST_REQUIRE((f.resume(acquire_input::given_back(ml::detail::success(false), a.at + 1ms)).what == kind::read));
  // A later hand-off above what was read is ours as usual, from the new join.
  handed.held.token = 10;
  a = f.resume(acquire_input::read(seen(handed), a.at + 1ms));
  BOOST_TEST((a.what == kind::grant && a.at == t0 + 110ms));
}

// The same on the memory store, three processes: R hands the lock to W, whose read of it comes
// back too late (W gives it back, its reply slow); X takes the freed lock; W joins the line again;
// then a failover serves W a majority snapshot from before the give-back. One holder at a time.
BOOST_AUTO_TEST_CASE(a_stale_snapshot_of_a_hand_off_given_back_makes_no_second_holder) {
  engine e;
  e.store->keep_history();
  auto r_side = other_provider(e), w_side = other_provider(e), x_side = other_provider(e);
  std::shared_ptr<waiter> w;
  auto r = hold_with_line(e, "twice", r_side, 1, [&] { w = wait_for_lock(w_side, "twice", 10s); });
  e.run_for(50ms);  // W's read after its join is back: its next one is the one held up
  e.store->inject(op::read, {fault::kind::hang, 1000ms});  // past the join's bound (E - m - room)
  BOOST_REQUIRE(!e.release(r));
  const auto handed_at = steady::now();
  const auto handed = e.store->get("twice");
  BOOST_REQUIRE(!handed.held.owner.empty());
  e.store->inject(op::release, {fault::kind::hang, 300ms});  // W's give-back: applied, answered late
  BOOST_REQUIRE(run_until(e, [&] { return e.store->get("twice").held.owner.empty(); }, 3s));
  BOOST_REQUIRE(!w->done);
  auto x = wait_for_lock(x_side, "twice", 5s);
  BOOST_REQUIRE(run_until(e, [&] { return x->done; }, 1s));
  BOOST_REQUIRE(!x->ec);
  until_in_line(e, "twice", 1);  // W joined again behind X
  e.store->inject(op::read, fault::as_of(handed_at));  // the hand-off, as a new primary's snapshot shows it
  e.run_for(600ms);
  BOOST_TEST(!(w->done && !w->ec && x->held.held()), "two holders: W granted token " << handed.held.token
                                                                                      << " while X holds " << x->held.fencing_token());
  BOOST_TEST(!e.release(x->held));
  BOOST_REQUIRE(run_until(e, [&] { return w->done; }, 3s));
  BOOST_TEST(!w->ec, w->ec.message());
  BOOST_TEST(w->held.fencing_token() > x->held.fencing_token(), "W holds after X, with a token above X's");
}

// A refresh that finds the entry gone reads at once: the lock may have been handed to us.
BOOST_AUTO_TEST_CASE(a_refresh_that_finds_no_entry_reads_at_once) {
  auto f = joined();
  auto a = f.resume(acquire_input::read(seen(line_doc(other, {{me, 7}}, 8)), t0 + 320ms));
  BOOST_REQUIRE((a.what == kind::refresh));
  BOOST_TEST((f.resume(acquire_input::refreshed(ml::detail::success(false), t0 + 330ms, t0 + 335ms))
      .what == kind::read));
}

// A provider put in line by its own hand-off starts in line: it waits one first delay, then reads
// (majority).
BOOST_AUTO_TEST_CASE(an_enrolled_acquire_starts_in_line) {
  auto p = params();
  p.enrolled = ml::detail::acquire_params::line_place{4, t0 - 50ms};
  acquire_fsm f("x", p);
  auto first = f.resume(acquire_input::start(t0));
  BOOST_REQUIRE_MESSAGE((first.what == kind::wait_until), "the lock was just handed to someone else: no read yet");
  BOOST_TEST(((first.at >= t0 + 10ms) && (first.at <= t0 + 20ms)));
  BOOST_REQUIRE((f.resume(acquire_input::timer(first.at)).what == kind::read));
  BOOST_TEST((f.read_mode_now() == ml::detail::read_mode::majority));
  BOOST_TEST(f.joined());
  auto a = f.resume(acquire_input::read(seen(line_doc(me, {}, 8)), t0 + 10ms));
  BOOST_REQUIRE((a.what == kind::grant));
  BOOST_TEST((a.at == t0 - 50ms));
}

// An acquire put in line by its own provider's hand-off paces its first look like any waiter in
// line (at most (E - m - P) / 2 after its entry was written), whatever its backoff: a lock handed
// to it meanwhile is used, not found past its bound and given back.
BOOST_AUTO_TEST_CASE(an_enrolled_acquire_with_a_slow_backoff_looks_in_time_for_a_hand_off) {
  auto p = params();
  p.refresh_every = 300ms;
  p.backoff_min = 2000ms;
  p.backoff_max = 5000ms;
  p.enrolled = ml::detail::acquire_params::line_place{4, t0};
  acquire_fsm f("x", p);
  auto first = f.resume(acquire_input::start(t0));
  BOOST_REQUIRE((first.what == kind::wait_until));
  // E 1 s, m 100 ms, P 300 ms: it looks by t0 + 300 ms.
  BOOST_TEST((first.at <= t0 + 300ms), "first look " << (first.at - t0) / 1ms << " ms after entering the line");
  BOOST_REQUIRE((f.resume(acquire_input::timer(first.at)).what == kind::read));
  auto a = f.resume(acquire_input::read(seen(line_doc(me, {}, 5)), first.at));
  BOOST_TEST((a.what == kind::grant), "the hand-off was given back");
}

// Two providers: the release hands the lock to the other provider's waiter in line, in the one
// update of the release: no free document, no take by the waiter, token + 1.
BOOST_AUTO_TEST_CASE(a_release_hands_the_lock_to_the_head_of_the_line_in_one_command) {
  engine e;
  auto us = other_provider(e), them = other_provider(e);
  std::shared_ptr<waiter> next;
  auto first = hold_with_line(e, "line", us, 1, [&] { next = wait_for_lock(them, "line"); });
  const auto before = e.store->calls().size();
  BOOST_TEST(!e.release(first));
  BOOST_TEST(count_since(e, before, op::take) == 1u, "the hand-off");
  BOOST_TEST(count_since(e, before, op::release) == 0u, "never freed in between");
  const auto after_release = e.store->calls().size();
  BOOST_REQUIRE(run_until(e, [&] { return next->done; }, 2s));
  BOOST_TEST(!next->ec, next->ec.message());
  BOOST_TEST(count_since(e, after_release, op::take) == 0u, "the waiter only read");
  BOOST_TEST(next->held.fencing_token() == first.fencing_token() + 1);
  BOOST_TEST(e.store->get("line").held.owner == next->held.owner_id());
  BOOST_TEST(e.store->get("line").line.empty());
  e.run_for(500ms);
  BOOST_TEST(next->held.held(), "it renews like any lease");
  BOOST_TEST(!e.release(next->held));
  BOOST_TEST(e.store->get("line").held.owner.empty());
}

// With a waiter of its own parked, the release also puts it in line: the lock goes to the other
// provider and comes back with one update each way, and nobody joins by hand.
BOOST_AUTO_TEST_CASE(the_release_puts_its_next_waiter_in_line_in_the_same_update) {
  engine e;
  auto [us, them, theirs, ours, first] = with_both_waiting(e, "both");
  const auto before = e.store->calls().size();
  BOOST_TEST(!e.release(first));
  BOOST_REQUIRE(run_until(e, [&, &theirs = theirs] { return theirs->done; }, 2s));
  BOOST_TEST(!theirs->ec, theirs->ec.message());
  BOOST_TEST(e.store->get("both").line.size() == 1u, "ours is in line");
  BOOST_TEST(!e.release(theirs->held));
  BOOST_REQUIRE(run_until(e, [&, &ours = ours] { return ours->done; }, 2s));
  BOOST_TEST(!ours->ec, ours->ec.message());
  BOOST_TEST(ours->held.fencing_token() == first.fencing_token() + 2);
  BOOST_TEST(count_since(e, before, op::take) == 2u, "two hand-offs");
  BOOST_TEST(count_since(e, before, op::join_line) == 0u);
  BOOST_TEST(count_since(e, before, op::release) == 0u);
  BOOST_TEST(!e.release(ours->held));
}

// Someone joined after the holder last looked: the hand-off (to its own waiter) misses, the
// holder reads once and hands the lock to the line instead.
BOOST_AUTO_TEST_CASE(a_hand_off_that_misses_a_changed_line_reads_and_hands_to_the_line) {
  engine e;
  auto them = other_provider(e);
  auto [ec, first] = e.acquire("changed", 1s);
  BOOST_REQUIRE(!ec);
  auto ours = wait_for_lock(e.p, "changed");
  auto theirs = wait_for_lock(them, "changed");
  until_in_line(e, "changed", 1);
  const auto before = e.store->calls().size();
  BOOST_TEST(!e.release(first));
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 2s));
  BOOST_TEST(!theirs->ec);
  BOOST_TEST(count_since(e, before, op::take) == 2u, "the local hand-off that missed, then the hand-off to the line");
  BOOST_TEST(count_since(e, before, op::release) == 0u);
  BOOST_TEST(!e.release(theirs->held));
  BOOST_REQUIRE(run_until(e, [&] { return ours->done; }, 2s));
  BOOST_TEST(!ours->ec);
  BOOST_TEST(!e.release(ours->held));
}

// A waiter that gives up just as the lock is handed to it: its leave finds no entry, so the lock
// named after it is freed at once rather than left to expire.
BOOST_AUTO_TEST_CASE(a_lock_handed_to_a_waiter_that_gave_up_is_freed_at_once) {
  engine e(fast(2000ms));
  auto us = other_provider(e, fast(2000ms)), them = other_provider(e, fast(2000ms));
  asio::cancellation_signal stop;
  std::shared_ptr<waiter> theirs;
  auto first = hold_with_line(e, "gave-up", us, 1, [&] { theirs = wait_for_lock(them, "gave-up", 5s, stop.slot()); });
  e.store->inject(op::read, fault(fault::kind::hang, 300ms));  // its next look hangs
  e.run_for(40ms);
  BOOST_TEST(!e.release(first));  // handed to it while its read hangs
  stop.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 2s));
  BOOST_TEST((theirs->ec == asio::error::operation_aborted), theirs->ec.message());
  BOOST_REQUIRE(run_until(e, [&] { return e.store->get("gave-up").held.owner.empty(); }, 500ms));
  BOOST_TEST(e.store->count(op::release_owners) == 1u);
}

// A registrant that died in line is handed the lock and never reads it: the next waiter takes
// over after one expiry + margin of observation, as from any dead holder.
BOOST_AUTO_TEST_CASE(a_dead_registrant_costs_at_most_one_expiry) {
  engine e(fast(1000ms));
  auto us = other_provider(e), them = other_provider(e);
  // A process that joins the line and then stops: a provider whose executor stops running.
  asio::io_context frozen;
  auto dead_p = std::make_shared<ml::detail::provider_impl>(frozen.get_executor(), e.store, fast(), nullptr);
  std::shared_ptr<waiter> dead, theirs;
  auto first = hold_with_line(e, "dead", us, 2, [&] {
    dead = wait_for_lock(dead_p, "dead");
    const auto end = steady::now() + 2s;
    while (e.store->get("dead").line.size() < 2 && steady::now() < end) {
      e.run_one();
      frozen.run_one_for(5ms);
    }
    theirs = wait_for_lock(them, "dead");
  });
  const auto dead_owner = e.store->get("dead").line.front().owner;
  const auto released = steady::now();
  BOOST_TEST(!e.release(first));
  BOOST_TEST(e.store->get("dead").held.owner == dead_owner, "handed to the head, which never reads it");
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 3s));
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - released);
  BOOST_TEST(!theirs->ec, theirs->ec.message());
  BOOST_TEST(waited >= 1000ms, "not before the dead one's expiry + margin: " << waited.count() << " ms");
  BOOST_TEST(waited <= 1100ms + 400ms, "one expiry + margin, and a little: " << waited.count() << " ms");
  BOOST_TEST(!e.release(theirs->held));
}

// A hand-off whose reply is lost may have landed: the head may hold the lock then, so the
// releaser only frees its own (owner, token), never the head's. The head gets the lock.
BOOST_AUTO_TEST_CASE(an_ambiguous_hand_off_never_frees_the_heads_lock) {
  engine e;
  auto us = other_provider(e), them = other_provider(e);
  std::shared_ptr<waiter> theirs;
  auto first = hold_with_line(e, "unsure", us, 1, [&] { theirs = wait_for_lock(them, "unsure"); });
  e.store->inject(op::take, {fault::kind::stream_error_after});
  BOOST_TEST((e.release(first) == ml::errc::ambiguous_result));
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 2s));
  BOOST_TEST(!theirs->ec, theirs->ec.message());
  BOOST_TEST(theirs->held.fencing_token() == first.fencing_token() + 1, "the hand-off that landed");
  e.run_for(600ms);  // the releaser's background attempts are over
  BOOST_TEST(theirs->held.held());
  BOOST_TEST(e.store->get("unsure").held.owner == theirs->held.owner_id());
  BOOST_TEST(!e.release(theirs->held));
}

// A hand-off to the line that also enrolled our next waiter, whose outcome is unknown: the entry it
// may have written is taken out again (its owner id is nobody's once the waiter starts afresh),
// so the line holds only the waiter's own join and the lock comes to it after the head.
BOOST_AUTO_TEST_CASE(an_ambiguous_hand_off_takes_out_the_entry_it_enrolled) {
  engine e;
  auto [us, them, theirs, ours, first] = with_both_waiting(e, "enrolled");
  const auto before = e.store->calls().size();
  e.store->inject(op::take, {fault::kind::stream_error_after});  // applied, reply lost
  BOOST_TEST((e.release(first) == ml::errc::ambiguous_result));
  BOOST_REQUIRE(run_until(e, [&, &theirs = theirs] { return theirs->done; }, 2s));
  BOOST_TEST(!theirs->ec, theirs->ec.message());
  e.run_for(300ms);
  BOOST_TEST(count_since(e, before, op::leave_line) >= 1u, "the enrolled entry is left");
  BOOST_TEST(e.store->get("enrolled").line.size() == 1u, "only our waiter's own join");
  BOOST_TEST(!e.release(theirs->held));
  BOOST_REQUIRE(run_until(e, [&, &ours = ours] { return ours->done; }, 2s));
  BOOST_TEST(!ours->ec, ours->ec.message());
  BOOST_TEST(!e.release(ours->held));
}

// A head waiting through a hold longer than the lease shows it is still there once per renewal
// period (a write each), not once per look; the lock handed to it then has most of a lease left.
BOOST_AUTO_TEST_CASE(a_head_refreshes_its_entry_once_per_renewal_period) {
  engine e(fast(600ms));
  auto us = other_provider(e, fast(600ms)), them = other_provider(e, fast(600ms));
  std::shared_ptr<waiter> theirs;
  auto first = hold_with_line(e, "long", us, 1, [&] { theirs = wait_for_lock(them, "long"); });
  const auto before = e.store->calls().size();
  e.run_for(1500ms);  // 2.5 leases
  const auto refreshes = count_since(e, before, op::refresh_line);
  BOOST_TEST(refreshes >= 5u);  // every 200 ms
  BOOST_TEST(refreshes <= 8u);
  BOOST_TEST(count_since(e, before, op::read) > 2 * refreshes, "reads are not writes");
  BOOST_TEST(!e.release(first));
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 2s));
  BOOST_TEST(!theirs->ec, theirs->ec.message());
  e.run_for(300ms);
  BOOST_TEST(theirs->held.held(), "its clock started at a recent refresh, not at the join 1.5 s ago");
  BOOST_TEST(!e.release(theirs->held));
}

// A waiter in line looks often enough to use a hand-off, whatever its backoff: at least every
// (E - m - R') / 2, where R' is its refresh period, and it wakes to refresh its entry when that
// is due (docs/design.md section 7, point 6). Here E = 1 s, m = 100 ms, R = 300 ms: every 300 ms
// at most, against a backoff of 2..5 s that made every hand-off late.
BOOST_AUTO_TEST_CASE(a_slow_backoff_in_line_still_looks_in_time_for_a_hand_off) {
  auto p = params();
  p.backoff_min = 2000ms;
  p.backoff_max = 5000ms;
  acquire_fsm f("x", p);
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc(other, {}, 7)), t0));
  BOOST_REQUIRE((a.what == kind::join));
  a = f.resume(acquire_input::joined(ml::detail::success(true), t0 + 10ms, t0 + 12ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_TEST((a.at <= t0 + 12ms + 300ms), "looks again within (E - m - R) / 2");
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::read));
  a = f.resume(acquire_input::read(seen(line_doc(other, {{me, 7}}, 8)), a.at));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_TEST((a.at <= t0 + 10ms + 300ms), "wakes when its refresh is due");
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::read));
  BOOST_TEST((f.resume(acquire_input::read(seen(line_doc(other, {{me, 7}}, 8)), a.at)).what == kind::refresh));
}

// The same through two providers: a head with a 2..5 s backoff uses the lock handed to it (no
// give-back, no take of its own) within a few hundred ms, not after every hand-off has gone stale.
BOOST_AUTO_TEST_CASE(a_head_with_a_slow_backoff_uses_its_hand_off) {
  engine e;
  auto slow = fast();
  slow.backoff_min = 2000ms;
  slow.backoff_max = 5000ms;
  auto us = other_provider(e), them = other_provider(e, slow);
  std::shared_ptr<waiter> theirs;
  auto first = hold_with_line(e, "slow-poll", us, 1, [&] { theirs = wait_for_lock(them, "slow-poll"); });
  e.run_for(1200ms);  // a while in line: the backoff has grown
  const auto before = e.store->calls().size();
  const auto released = steady::now();
  BOOST_TEST(!e.release(first));
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 6s));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - released);
  BOOST_TEST(!theirs->ec, theirs->ec.message());
  BOOST_TEST(count_since(e, before, op::release) == 0u, "the hand-off was used, not given back");
  BOOST_TEST(count_since(e, before, op::take) == 1u, "the hand-off only");
  // The counts above are the guard: a hand-off used after its bound (E - m, 900 ms) would be a
  // late one, given back. This only bounds the whole, with room for a stalled run.
  BOOST_TEST(took < 1500ms, took.count() << " ms");
  BOOST_TEST(!e.release(theirs->held));
}

// Two processes give one name different expiries: the releaser writes its own (4 s), so the
// head's (10 s, margin 1 s, renewal period 3.33 s) first deadline is its entry write + 4 s - 1 s,
// sooner than its own renewal period after the grant. Its first renewal is due by its own clock
// (docs/design.md section 7, the first renewal): before, it was lost unrenewed about 3 s after its
// join. The grant bound is the entry write + 2 s.
BOOST_AUTO_TEST_CASE(a_lock_handed_over_with_a_shorter_expiry_reaches_its_first_renewal) {
  hand_over_and_keep("mixed-expiry", fast(4000ms), fast(10000ms), 0ms, 3500ms);
}

// One expiry everywhere, but a renewal period above (E - m) / 2 (6 s, 600 ms, 3.6 s): a hand-off
// read about 2.3 s after the entry write (its refresh is due at 2.7 s) left a first renewal 3.6 s
// after the grant, past the deadline (entry + 5.4 s); now it is due 3.6 s after the entry write.
BOOST_AUTO_TEST_CASE(a_lock_handed_over_late_in_a_long_renewal_period_reaches_its_first_renewal) {
  auto slow_renewal = fast(6000ms);
  slow_renewal.renew_every = 3600ms;
  hand_over_and_keep("long-period", fast(6000ms), slow_renewal, 2300ms, 3500ms);
}

// An acquire whose entry went (handed the lock and given back, removed as a head that never came)
// joins again however often that happens: only joins that lost the ticket race count towards the
// limit, so a waiter never becomes invisible to a releaser's "nobody waiting" check that way.
BOOST_AUTO_TEST_CASE(a_waiter_whose_entry_keeps_going_joins_again) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto now = t0;
  for (int i = 0; i < 8; ++i) {
    auto a = f.resume(acquire_input::read(seen(line_doc(other, {}, 7 + i)), now));
    BOOST_REQUIRE_MESSAGE((a.what == kind::join), "join " << i);
    a = f.resume(acquire_input::joined(ml::detail::success(true), now, now + 1ms));
    BOOST_REQUIRE((a.what == kind::wait_until));
    now = a.at;
    BOOST_REQUIRE((f.resume(acquire_input::timer(now)).what == kind::read));
  }
  // Lost races do count: after max_joins of them it waits unregistered.
  acquire_fsm g("x", params());
  g.resume(acquire_input::start(t0));
  now = t0;
  for (int i = 0; i < 5; ++i) {
    auto a = g.resume(acquire_input::read(seen(line_doc(other, {}, 7)), now));
    BOOST_REQUIRE((a.what == kind::join));
    a = g.resume(acquire_input::joined(ml::detail::success(false), now, now + 1ms));
    now = a.at;
    BOOST_REQUIRE((g.resume(acquire_input::timer(now)).what == kind::read));
  }
  BOOST_TEST((g.resume(acquire_input::read(seen(line_doc(other, {}, 7)), now)).what == kind::wait_until));
  BOOST_TEST(!g.joined(), "no join was applied: nothing to leave");
}

BOOST_AUTO_TEST_SUITE_END()
