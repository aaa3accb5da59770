// acquire_fsm without I/O and without a clock: every step driven by hand, the time passed in.
#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>
#include <limits>

#include "printable.hpp"
#include "sansio/acquire_fsm.hpp"
#include "fsm_params.hpp"
#include "mongolock/error.hpp"

namespace ml = mongolock;
using namespace ml::detail;
using namespace std::chrono_literals;
using kind = acquire_action::kind;
using in = acquire_input;  // what happened: f.resume(in::read(reply, received))
using tp = mongolock::detail::boot_clock::time_point;

namespace {

const tp t0{std::chrono::seconds{1000}};

acquire_params params(bool try_once = false) { return test::fsm_params(t0, "me", try_once); }

lock_doc held_by(std::string owner, std::int64_t token, std::int64_t beat = 0) {
  lock_doc d;
  d.exists = true;
  d.held = held_state{std::move(owner), token, beat, 1000ms};
  return d;
}

template <class T>
outcome<T> err(ml::errc e, bool ambiguous) {
  outcome<T> o;
  o.ec = make_error_code(e);
  o.ambiguous = ambiguous;
  return o;
}

// Starts the fsm and answers its blind take "not taken" (the document is there and not ours to
// take without a look): the read that follows.
acquire_action blind_missed(acquire_fsm& f, tp at = t0) {
  auto a = f.resume(in::start(at));
  BOOST_TEST_REQUIRE(a.what == kind::take);
  BOOST_REQUIRE(!f.request().observed.exists);
  a = f.resume(in::take(success(false), at, at));
  BOOST_TEST_REQUIRE(a.what == kind::read);
  return a;
}

// Runs the fsm to its first take against a free document with token 7 (read after the blind take).
acquire_action to_take(acquire_fsm& f) {
  blind_missed(f);
  auto a = f.resume(in::read(success(held_by("", 7)), t0));
  BOOST_TEST_REQUIRE(a.what == kind::take);
  return a;
}

// A read while waiting; a waiting acquire's first look at a held lock also joins its line
// (answered here as applied), then waits as the read decided.
acquire_action look(acquire_fsm& f, const lock_doc& seen, tp at) {
  auto a = f.resume(in::read(success(seen), at));
  if (a.what == kind::join) a = f.resume(in::joined(success(true), at, at));
  return a;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(acquire_fsm_suite)

BOOST_AUTO_TEST_CASE(free_lock_is_taken_with_the_next_token_and_granted_from_send_time) {
  acquire_fsm f("x", params());
  auto a = to_take(f);
  BOOST_TEST(f.request().token == 8);
  BOOST_TEST(f.request().observed.held.token == 7);
  auto g = f.resume(in::take(success(true), t0 + 1ms, t0 + 5ms));
  BOOST_TEST(g.what == kind::grant);
  BOOST_TEST(g.token == 8);
  BOOST_TEST((g.at == t0 + 1ms));  // the lease clock starts when the take was sent
}

// The first action is the blind take (docs/design.md section 1): no read, a token at the wall
// clock's reading, only while nobody is in line; a try's too.
BOOST_AUTO_TEST_CASE(an_acquire_starts_with_a_blind_take_at_the_clock) {
  auto p = params();
  p.token_clock = 1'800'000'000'000'000'000;
  acquire_fsm f("x", p);
  auto a = f.resume(in::start(t0));
  BOOST_TEST_REQUIRE(a.what == kind::take);
  BOOST_TEST(a.token == p.token_clock);
  BOOST_TEST(!f.request().observed.exists);
  BOOST_TEST(f.request().nobody_waiting);
  BOOST_TEST(f.resume(in::take(success(true), t0, t0 + 2ms)).token == p.token_clock);
  acquire_fsm t("x", params(true));
  BOOST_TEST_REQUIRE(t.resume(in::start(t0)).what == kind::take);
  BOOST_TEST(t.request().nobody_waiting, "a try's blind take too: it then knows the line is empty");
}

// The clock is read once, when the acquire is built, and advanced by the inputs' clock: a take
// after a wait is at least the clock's reading then, and above the document's token always.
BOOST_AUTO_TEST_CASE(a_token_is_above_the_document_and_at_least_the_clock) {
  auto p = params();
  p.token_clock = 5'000'000'000;
  acquire_fsm f("x", p);
  blind_missed(f);
  BOOST_TEST(f.resume(in::read(success(held_by("", 7)), t0 + 2s)).token == 7'000'000'000, "the clock, 2 s on");
  acquire_fsm g("x", p);
  blind_missed(g);
  BOOST_TEST(g.resume(in::read(success(held_by("", 9'000'000'000)), t0 + 2s))
      .token == 9'000'000'001, "one above a token ahead of the clock");
  acquire_fsm h("x", p);
  blind_missed(h);
  auto a = h.resume(in::read(success(held_by("", std::numeric_limits<std::int64_t>::max())), t0));
  BOOST_TEST(a.what == kind::fail);
  BOOST_TEST((a.ec == ml::errc::server_error));
}

// A document that is a semaphore's or a rw_lock's declaration (section 10) is never a lock's.
BOOST_AUTO_TEST_CASE(a_declared_name_fails_with_declaration_mismatch) {
  acquire_fsm f("x", params());
  blind_missed(f);
  lock_doc d;
  d.exists = true;
  d.declared = std::make_shared<const declaration>(declaration{"semaphore", 3});
  auto a = f.resume(in::read(success(d), t0));
  BOOST_TEST(a.what == kind::fail);
  BOOST_TEST((a.ec == ml::errc::declaration_mismatch));
  BOOST_TEST(a.why == "'x' is declared as a semaphore of 3 permits, not a lock");
}

BOOST_AUTO_TEST_CASE(live_holder_is_waited_out_by_observation_only) {
  acquire_fsm f("x", params());
  f.resume(in::start(t0));
  auto a = look(f, held_by("other", 5, 1), t0);
  BOOST_TEST(a.what == kind::wait_until);
  // The same (owner, token, beat) until expiry + margin has passed on our clock: take over.
  a = look(f, held_by("other", 5, 1), t0 + 1099ms);
  BOOST_TEST(a.what == kind::wait_until);
  a = look(f, held_by("other", 5, 1), t0 + 1100ms);
  BOOST_TEST(a.what == kind::take);
  BOOST_TEST(f.request().observed.held.beat == 1);
  // A renewal in between restarts the window.
  acquire_fsm g("x", params());
  g.resume(in::start(t0));
  look(g, held_by("other", 5, 1), t0);
  BOOST_TEST(look(g, held_by("other", 5, 2), t0 + 1100ms).what == kind::wait_until);
}

BOOST_AUTO_TEST_CASE(write_concern_error_fails_ambiguous_and_lists_the_take_to_give_back) {
  acquire_fsm f("x", params());
  to_take(f);
  auto a = f.resume(in::take(err<bool>(ml::errc::ambiguous_result, true), t0, t0 + 5ms));
  BOOST_TEST(a.what == kind::fail);
  BOOST_TEST((a.ec == ml::errc::ambiguous_result));
  BOOST_TEST(f.unconfirmed() == std::vector<std::int64_t>{8});
}

BOOST_AUTO_TEST_CASE(stream_error_after_sending_is_rechecked_and_confirmed) {
  acquire_fsm f("x", params());
  to_take(f);
  BOOST_TEST(f.resume(in::take(err<bool>(ml::errc::server_unavailable, true), t0, t0 + 5ms)).what == kind::recheck);
  auto g = f.resume(in::recheck(success(held_by("me", 8)), t0 + 10ms));
  BOOST_TEST(g.what == kind::grant);
  BOOST_TEST((g.at == t0));
  BOOST_TEST(f.unconfirmed().empty());
}

// A re-check the server refused: the take's outcome stays unknown. One that found no server is
// tried again after a wait (an election), the take still on the list to give back.
BOOST_AUTO_TEST_CASE(failed_recheck_is_ambiguous_and_keeps_the_take_to_give_back) {
  acquire_fsm f("x", params());
  to_take(f);
  f.resume(in::take(err<bool>(ml::errc::server_unavailable, true), t0, t0 + 5ms));
  auto a = f.resume(in::recheck(err<lock_doc>(ml::errc::server_error, false), t0 + 10ms));
  BOOST_TEST((a.ec == ml::errc::ambiguous_result));
  BOOST_TEST(f.unconfirmed() == std::vector<std::int64_t>{8});

  acquire_fsm g("x", params());
  to_take(g);
  g.resume(in::take(err<bool>(ml::errc::server_unavailable, true), t0, t0 + 5ms));
  a = g.resume(in::recheck(err<lock_doc>(ml::errc::server_unavailable, false), t0 + 5s));
  BOOST_TEST((a.what == kind::wait_until));
  BOOST_TEST(g.unconfirmed() == std::vector<std::int64_t>{8});
  BOOST_REQUIRE((g.resume(in::timer(a.at)).what == kind::read));
  a = g.resume(in::read(success(held_by("me", 8)), a.at + 1ms));
  BOOST_TEST((a.what == kind::give_back), "landed, but read past its bound");
}

BOOST_AUTO_TEST_CASE(our_owner_seen_too_late_is_given_back) {
  acquire_fsm f("x", params());
  to_take(f);
  f.resume(in::take(err<bool>(ml::errc::server_unavailable, true), t0, t0 + 5ms));
  BOOST_TEST(f.resume(in::recheck(success(held_by("", 7)), t0 + 10ms)).what == kind::take);  // not landed yet
  f.resume(in::take(success(false), t0 + 11ms, t0 + 12ms));                                  // it landed meanwhile
  // Every read is a majority read: our own owner id there is a committed take, ours only if it
  // came back before its bound (t0 + 900 ms).
  auto a = f.resume(in::read(success(held_by("me", 8)), t0 + 900ms));
  BOOST_TEST(a.what == kind::give_back);
  BOOST_TEST(a.token == 8);
  BOOST_TEST(f.resume(in::given_back(success(true), t0 + 905ms)).what == kind::read);
  BOOST_TEST(f.unconfirmed().empty());
}

BOOST_AUTO_TEST_CASE(late_reply_to_a_take_is_given_back) {
  acquire_fsm f("x", params());
  to_take(f);
  auto a = f.resume(in::take(success(true), t0, t0 + 800ms));
  BOOST_TEST(a.what == kind::give_back);
  BOOST_TEST(a.token == 8);
  BOOST_TEST((f.take_bound(t0) == t0 + 800ms), "E - m, less the first renewal's room: min(m, E - m - R, (E - m) / 4)");
}

// A grant leaves the lease room to reach its first renewal (docs/design.md section 7, the first
// renewal): E 1 s, m 100 ms, R 600 ms: room min(m, E - m - R, (E - m) / 4) = 100 ms, so a take answered 799 ms
// after its send is granted (its renewal due at once, 101 ms before the deadline) and one
// answered at 800 ms is given back; before, both were granted up to 900 ms and the lease was lost
// unrenewed (its first renewal came R after the grant).
BOOST_AUTO_TEST_CASE(a_grant_leaves_room_for_the_first_renewal) {
  auto p = params();
  p.refresh_every = 600ms;
  acquire_fsm in_time("x", p);
  to_take(in_time);
  auto a = in_time.resume(in::take(success(true), t0, t0 + 799ms));
  BOOST_TEST(a.what == kind::grant);
  BOOST_TEST((a.at == t0));
  acquire_fsm late("x", p);
  to_take(late);
  BOOST_TEST(late.resume(in::take(success(true), t0, t0 + 800ms)).what == kind::give_back);
  BOOST_TEST((late.take_bound(t0) == t0 + 800ms));
}

// A blind take answered "not taken" (E11000) may still land: the answer may be the driver's resend,
// and the first attempt, held up on the way, lands later on a free state (docs/design.md section
// 4). A read that then shows it counts from the blind take's send, not from a later join of ours:
// at t0 + 900 ms it is past t0's bound and given back (before: granted, its clock started 500 ms
// late, at the join).
BOOST_AUTO_TEST_CASE(a_blind_take_answered_not_taken_counts_from_its_send_if_it_shows_up) {
  acquire_fsm f("x", params());
  auto a = f.resume(in::start(t0));
  BOOST_TEST_REQUIRE(a.what == kind::take);
  const auto blind = a.token;
  BOOST_TEST_REQUIRE(f.resume(in::take(success(false), t0, t0 + 2ms)).what == kind::read);
  BOOST_TEST_REQUIRE(look(f, held_by("other", 5, 1), t0 + 500ms).what == kind::wait_until);  // joined at 500 ms
  BOOST_REQUIRE(f.joined());
  a = f.resume(in::read(success(held_by("me", blind)), t0 + 900ms));
  BOOST_TEST(a.what == kind::give_back, "granted from the join's send");
}

// Two takes of one token, both of unknown outcome: a read showing it counts from the first send
// (t0), whichever landed, so at t0 + 850 ms (past t0's bound, before t0 + 100 ms's) it is given
// back, not granted.
BOOST_AUTO_TEST_CASE(a_token_taken_twice_counts_from_its_first_send) {
  acquire_fsm f("x", params());
  to_take(f);
  BOOST_TEST_REQUIRE(f.resume(in::take(err<bool>(ml::errc::server_unavailable, true), t0, t0 + 5ms))
      .what == kind::recheck);
  auto a = f.resume(in::recheck(success(held_by("", 7)), t0 + 10ms));  // not landed (yet)
  BOOST_TEST_REQUIRE(a.what == kind::take);
  BOOST_TEST_REQUIRE(a.token == 8);
  BOOST_TEST_REQUIRE(f.resume(in::take(err<bool>(ml::errc::server_unavailable, true), t0 + 100ms, t0 + 105ms))
      .what == kind::recheck);
  BOOST_TEST(f.resume(in::recheck(success(held_by("me", 8)), t0 + 850ms)).what == kind::give_back);
}

// A take abandoned at its bound may still land; a read that then shows it is past the bound (the
// driver's late reply frees it too): given back, never granted, also for an acquire in line,
// whose entry write is older than the take.
BOOST_AUTO_TEST_CASE(a_timed_out_take_seen_landed_is_given_back) {
  acquire_fsm f("x", params());
  to_take(f);
  BOOST_TEST_REQUIRE(f.resume(in::take(err<bool>(ml::errc::timeout, false), t0, t0 + 900ms)).what == kind::read);
  auto a = f.resume(in::read(success(held_by("me", 8)), t0 + 905ms));
  BOOST_TEST(a.what == kind::give_back);
  BOOST_TEST(a.token == 8);
}

// A take still in flight when the acquire's deadline passes may land after the acquire failed. Its
// late reply frees it, but a process that exits first never sees that reply: the take is
// abandoned, and the driver gives it back as the acquire fails (the late reply then matches
// nothing).
BOOST_AUTO_TEST_CASE(a_take_in_flight_at_the_deadline_is_given_back_as_the_acquire_fails) {
  acquire_fsm f("x", params());
  to_take(f);
  auto a = f.resume(in::take(err<bool>(ml::errc::timeout, false), t0 + 9s, t0 + 10s));
  BOOST_TEST(a.what == kind::fail);
  BOOST_TEST((a.ec == ml::errc::timeout));
  BOOST_TEST(f.abandoned() == std::vector<std::int64_t>{8}, boost::test_tools::per_element());
}

// A take abandoned at its bound may still land, and its late reply gives back (owner, token): the
// next take of the same acquire goes above it, so that give-back never matches the lock it takes.
BOOST_AUTO_TEST_CASE(a_take_after_an_abandoned_one_carries_a_token_above_it) {
  acquire_fsm f("x", params());
  to_take(f);  // token 8
  BOOST_TEST_REQUIRE(f.resume(in::take(err<bool>(ml::errc::timeout, false), t0, t0 + 900ms)).what == kind::read);
  auto a = f.resume(in::read(success(held_by("", 7)), t0 + 905ms));
  BOOST_TEST_REQUIRE(a.what == kind::take);
  BOOST_TEST(a.token == 9);
}

// A read that shows an abandoned take landed never grants it, even before the take's bound (a
// call timer that fired early by the FSM's clock): the late reply's give-back would free it.
BOOST_AUTO_TEST_CASE(a_read_never_grants_the_token_of_an_abandoned_take) {
  acquire_fsm f("x", params());
  to_take(f);  // token 8, sent at t0
  BOOST_TEST_REQUIRE(f.resume(in::take(err<bool>(ml::errc::timeout, false), t0, t0 + 500ms)).what == kind::read);
  auto a = f.resume(in::read(success(held_by("me", 8)), t0 + 600ms));
  BOOST_TEST(a.what == kind::give_back, "granted token " << a.token << ", which the late reply gives back");
}

BOOST_AUTO_TEST_CASE(lost_race_reads_again_at_once) {
  acquire_fsm f("x", params());
  to_take(f);
  BOOST_TEST(f.resume(in::take(success(false), t0, t0 + 1ms)).what == kind::read);
  BOOST_TEST(f.lost_races() == 1u);
}

// Each kind of step an acquire waits on, cancelled: its blind take, the read after a take that
// missed, the take that follows a read, and its wait between looks.
BOOST_AUTO_TEST_CASE(cancellation_at_a_take_a_read_or_a_wait_fails_with_operation_aborted) {
  const auto aborted_read = outcome<lock_doc>{boost::asio::error::operation_aborted, "", false, {}};
  const auto aborted_take = outcome<bool>{boost::asio::error::operation_aborted, "", false, false};
  // The blind take: abandoned in flight, it may still land, and the process may end before its
  // late reply.
  acquire_fsm a("x", params());
  BOOST_REQUIRE((a.resume(in::start(t0)).what == kind::take));
  BOOST_TEST((a.resume(in::take(aborted_take, t0, t0)).ec == boost::asio::error::operation_aborted));
  BOOST_TEST(a.abandoned().size() == 1u);
  // The read after the blind take missed.
  acquire_fsm b("x", params());
  blind_missed(b);
  BOOST_TEST((b.resume(in::read(aborted_read, t0)).ec == boost::asio::error::operation_aborted));
  // The take after a read.
  acquire_fsm c("x", params());
  to_take(c);
  BOOST_TEST((c.resume(in::take(aborted_take, t0, t0)).ec == boost::asio::error::operation_aborted));
  BOOST_TEST(c.abandoned() == std::vector<std::int64_t>{8}, boost::test_tools::per_element());
  // The wait between two looks.
  acquire_fsm d("x", params());
  blind_missed(d);
  BOOST_REQUIRE((look(d, held_by("other", 1), t0).what == kind::wait_until));
  BOOST_TEST((d.resume(in::cancel()).ec == boost::asio::error::operation_aborted));
}

// An acquire with a deadline at t0 + 50 ms that found the lock held at t0; `a`: what it does next.
acquire_fsm held_until_the_deadline(acquire_action& a) {
  auto p = params();
  p.deadline = t0 + 50ms;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  a = look(f, held_by("other", 1), t0);
  return f;
}

// An election or a primary's crash outlasts the server selection timeout: a waiting acquire with
// time left keeps trying (paced by the backoff), and is granted once a server answers.
BOOST_AUTO_TEST_CASE(a_waiting_acquire_rides_out_calls_that_find_no_server) {
  acquire_fsm f("x", params());
  BOOST_REQUIRE((f.resume(in::start(t0)).what == kind::take));
  // The blind take found no server: not applied, so nothing to give back; wait and read.
  auto a = f.resume(in::take(err<bool>(ml::errc::server_unavailable, false), t0, t0 + 5s));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_TEST((a.at > t0 + 5s && a.at <= t0 + 5s + 80ms));
  BOOST_REQUIRE((f.resume(in::timer(a.at)).what == kind::read));
  a = f.resume(in::read(err<lock_doc>(ml::errc::server_unavailable, false), a.at + 5ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_REQUIRE((f.resume(in::timer(a.at)).what == kind::read));
  a = f.resume(in::read(success(held_by("", 7)), a.at + 1ms));
  BOOST_TEST((a.what == kind::take && a.token == 8), "a server answered: the acquire goes on");
}

// At its deadline it ends with timeout, and the server is the reason, however the last call ended.
BOOST_AUTO_TEST_CASE(an_acquire_without_a_server_ends_at_its_deadline_with_timeout) {
  for (const int ending : {0, 1, 2}) {
    acquire_fsm f("x", params());
    blind_missed(f);
    auto a = f.resume(in::read(err<lock_doc>(ml::errc::server_unavailable, false), t0 + 5s));
    BOOST_REQUIRE((a.what == kind::wait_until));
    if (ending == 0) {
      a = f.resume(in::read(err<lock_doc>(ml::errc::server_unavailable, false), t0 + 10s));  // took until the deadline
    } else if (ending == 1) {
      BOOST_REQUIRE((f.resume(in::timer(a.at)).what == kind::read));
      a = f.resume(in::read(err<lock_doc>(ml::errc::timeout, false), t0 + 10s));  // cut short at the deadline
    } else {
      a = f.resume(in::timer(t0 + 10s));  // the wait reached it
    }
    BOOST_TEST_CONTEXT("ending " << ending) {
      BOOST_TEST((a.what == kind::fail));
      BOOST_TEST((a.ec == ml::errc::timeout));
      BOOST_TEST(a.why.find("no server answered in the last") != std::string::npos, a.why);
    }
  }
}

// A try looks once: no server is its answer, unless its take's outcome is unknown (a stream
// error after sending, then a re-check that found no server): that is ambiguous_result.
BOOST_AUTO_TEST_CASE(a_try_that_finds_no_server_fails_at_once) {
  acquire_fsm f("x", params(true));
  BOOST_REQUIRE((f.resume(in::start(t0)).what == kind::take));
  auto a = f.resume(in::take(err<bool>(ml::errc::server_unavailable, false), t0, t0 + 5s));
  BOOST_TEST((a.what == kind::fail && a.ec == ml::errc::server_unavailable));

  acquire_fsm g("x", params(true));
  BOOST_REQUIRE((g.resume(in::start(t0)).what == kind::take));
  BOOST_REQUIRE((g.resume(in::take(err<bool>(ml::errc::server_unavailable, true), t0, t0 + 5ms)).what == kind::recheck));
  a = g.resume(in::recheck(err<lock_doc>(ml::errc::server_unavailable, false), t0 + 5s));
  BOOST_TEST((a.what == kind::fail && a.ec == ml::errc::ambiguous_result), a.ec.message());
  BOOST_TEST(g.unconfirmed().size() == 1u, "given back as the try ends");
}

BOOST_AUTO_TEST_CASE(deadline_ends_the_wait_with_timeout) {
  acquire_action a;
  auto f = held_until_the_deadline(a);
  BOOST_TEST(a.what == kind::wait_until);
  BOOST_TEST((a.at <= t0 + 50ms));
  BOOST_TEST((look(f, held_by("other", 1), t0 + 50ms).ec == ml::errc::timeout));
}

// A wait whose timer fires at the deadline ends there, without one more read: a read sent then
// could only be cut short at once, and its "time limit reached while the server call was in
// flight" told the caller of a call that was not the reason.
BOOST_AUTO_TEST_CASE(a_wait_that_reaches_the_deadline_ends_without_another_read) {
  acquire_action a;
  auto f = held_until_the_deadline(a);
  // Backoff waits, each ending in a read, until the wait that ends at the deadline.
  for (int i = 0; i < 10 && a.what == kind::wait_until && a.at < t0 + 50ms; ++i) {
    const auto at = a.at;
    BOOST_TEST_REQUIRE(f.resume(in::timer(at)).what == kind::read);
    a = look(f, held_by("other", 1), at);
  }
  BOOST_TEST_REQUIRE(a.what == kind::wait_until);
  BOOST_REQUIRE((a.at == t0 + 50ms));
  a = f.resume(in::timer(a.at));
  BOOST_TEST(a.what == kind::fail);
  BOOST_TEST((a.ec == ml::errc::timeout));
  BOOST_TEST(a.why.find("in flight") == std::string::npos);
}

// A backoff that would end just before the deadline (5 ms, less than the shortest wait) is
// stretched to it: a read sent then could only be cut short at the deadline, and the caller would
// be told of a call in flight instead of the holder (integration.cli, under load).
BOOST_AUTO_TEST_CASE(a_look_that_would_end_just_before_the_deadline_waits_for_it_instead) {
  auto p = params();
  p.deadline = t0 + 50ms;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  const auto a = look(f, held_by("other", 1), t0 + 35ms);  // a first backoff of 10 ms: t0 + 45 ms
  BOOST_TEST_REQUIRE(a.what == kind::wait_until);
  BOOST_TEST((a.at == t0 + 50ms));
  const auto end = f.resume(in::timer(a.at));
  BOOST_TEST(end.what == kind::fail);
  BOOST_TEST((end.ec == ml::errc::timeout));
}

// A look sent within the shortest wait of the deadline after the lock was seen held (a poll group's
// wake may send it then) and cut short there fails as the deadline does: timeout, with no "in
// flight" reason. A first read cut short keeps its reason (no holder was seen), and so does a look
// sent long before the deadline that hung until it.
BOOST_AUTO_TEST_CASE(a_look_cut_short_by_the_deadline_after_a_holder_was_seen_blames_no_server_call) {
  auto p = params();
  p.deadline = t0 + 50ms;
  auto cut_short = err<lock_doc>(ml::errc::timeout, false);
  cut_short.message = "time limit reached while the server call was in flight";
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  const auto a = look(f, held_by("other", 1), t0);
  BOOST_TEST_REQUIRE(a.what == kind::wait_until);
  BOOST_TEST_REQUIRE(f.resume(in::timer(t0 + 45ms)).what == kind::read);  // 5 ms before the deadline
  const auto end = f.resume(in::read(cut_short, t0 + 50ms));
  BOOST_TEST_REQUIRE(end.what == kind::fail);
  BOOST_TEST((end.ec == ml::errc::timeout));
  BOOST_TEST(end.why == "");

  acquire_fsm g("x", p);
  g.resume(in::start(t0));
  const auto first = g.resume(in::read(cut_short, t0 + 50ms));
  BOOST_TEST((first.ec == ml::errc::timeout));
  BOOST_TEST(first.why == cut_short.message);

  // A look sent long before the deadline that hung until it: the server, not the holder, is why.
  auto q = params();
  q.deadline = t0 + 30s;
  acquire_fsm h("x", q);
  h.resume(in::start(t0));
  const auto b = look(h, held_by("other", 1), t0);
  BOOST_TEST_REQUIRE(b.what == kind::wait_until);
  BOOST_TEST_REQUIRE(h.resume(in::timer(b.at)).what == kind::read);
  const auto hung = h.resume(in::read(cut_short, t0 + 30s));
  BOOST_TEST((hung.ec == ml::errc::timeout));
  BOOST_TEST(hung.why == cut_short.message);
}

// A try confirming that a silent holder is gone, its last look cut short by its bound, leaves the
// holder there: busy, as when the bound ends its wait (on_timer).
BOOST_AUTO_TEST_CASE(a_confirming_look_cut_short_by_the_bound_is_busy) {
  auto p = params(true);
  p.confirm_silent = true;
  p.wall_now_ms = 1'000'000;
  p.deadline = t0 + 5s;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  auto d = held_by("other", 1);
  d.renewed_at_ms = 1;  // silent for far longer than 3 x its expiry
  const auto a = f.resume(in::read(success(d), t0));
  BOOST_TEST_REQUIRE(a.what == kind::wait_until);
  BOOST_TEST_REQUIRE(f.resume(in::timer(t0 + 5s - 5ms)).what == kind::read);
  const auto end = f.resume(in::read(err<lock_doc>(ml::errc::timeout, false), t0 + 5s));
  BOOST_TEST((end.ec == ml::errc::busy));
}

BOOST_AUTO_TEST_CASE(try_once_answers_busy_for_a_live_holder) {
  auto p = params(true);
  p.wall_now_ms = 1'000'000;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  auto d = held_by("other", 1);
  d.renewed_at_ms = 999'000;
  BOOST_TEST((f.resume(in::read(success(d), t0)).ec == ml::errc::busy));
}

// A semaphore's first look at a permit (docs/design.md section 10): a free permit with waiters in
// its line is theirs, so the try is busy; with an empty line it takes, requiring the line to stay
// empty.
BOOST_AUTO_TEST_CASE(a_try_in_turn_does_not_overtake_the_line) {
  auto p = params(true);
  p.in_turn = true;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  auto queued = held_by("", 7);
  queued.line = {line_entry{"someone", 3}};
  queued.waiting = 1;
  BOOST_TEST((f.resume(in::read(success(queued), t0)).ec == ml::errc::busy));

  acquire_fsm g("x", p);
  g.resume(in::start(t0));
  auto a = g.resume(in::read(success(held_by("", 7)), t0));
  BOOST_TEST_REQUIRE(a.what == kind::take);
  BOOST_TEST(g.request().nobody_waiting);
  // The same try without in_turn takes the queued permit (a plain try jumps the line).
  acquire_fsm h("x", params(true));
  h.resume(in::start(t0));
  BOOST_TEST(h.resume(in::read(success(queued), t0)).what == kind::take);
  BOOST_TEST(!h.request().nobody_waiting);
}

// A try answers at once unless the caller opted in to confirming a silent holder.
lock_doc silent_since(std::int64_t renewed_at_ms) {
  auto d = held_by("other", 1, 4);
  d.renewed_at_ms = renewed_at_ms;
  return d;
}

// A try that opted in to confirming silent holders; the local wall clock at 1,000 s.
acquire_params confirming() {
  auto p = params(true);
  p.confirm_silent = true;
  p.wall_now_ms = 1'000'000;
  return p;
}

BOOST_AUTO_TEST_CASE(a_confirmation_cut_short_by_the_bound_at_its_timer_is_busy) {
  auto p = confirming();
  p.deadline = t0 + 400ms;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  auto a = look(f, silent_since(1'000'000 - 3'600'000), t0);  // silent an hour by its own clock
  BOOST_TEST_REQUIRE(a.what == kind::wait_until);
  a = f.resume(in::timer(t0 + 400ms));
  BOOST_TEST(a.what == kind::fail);
  BOOST_TEST((a.ec == ml::errc::busy));
}

BOOST_AUTO_TEST_CASE(try_without_confirming_is_busy_even_for_a_long_silent_holder) {
  auto p = params(true);
  p.wall_now_ms = 1'000'000;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  BOOST_TEST((f.resume(in::read(success(silent_since(1'000)), t0)).ec == ml::errc::busy));  // silent 999 s
}

BOOST_AUTO_TEST_CASE(confirming_watches_a_silent_holder_then_takes_it) {
  auto p = confirming();
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  auto a = f.resume(in::read(success(silent_since(1'000)), t0));
  BOOST_TEST(a.what == kind::wait_until);
  // Same heartbeat for expiry + margin (1.1 s): expired by observation, taken.
  BOOST_TEST(f.resume(in::read(success(silent_since(1'000)), t0 + 500ms)).what == kind::wait_until);
  BOOST_TEST(f.resume(in::read(success(silent_since(1'000)), t0 + 1100ms)).what == kind::take);
}

BOOST_AUTO_TEST_CASE(confirming_answers_busy_if_the_holder_renews_or_the_bound_passes) {
  auto p = confirming();
  acquire_fsm renews("x", p);
  renews.resume(in::start(t0));
  renews.resume(in::read(success(silent_since(1'000)), t0));
  auto moved = silent_since(1'000);
  moved.held.beat = 5;
  BOOST_TEST((renews.resume(in::read(success(moved), t0 + 300ms)).ec == ml::errc::busy));

  p.deadline = t0 + 400ms;  // try_options::within
  acquire_fsm bounded("x", p);
  bounded.resume(in::start(t0));
  bounded.resume(in::read(success(silent_since(1'000)), t0));
  BOOST_TEST((bounded.resume(in::read(success(silent_since(1'000)), t0 + 400ms)).ec == ml::errc::busy));
}

// Found by fuzz/lock_doc_fuzz.cpp (UBSan): a renewed_at at the int64 limits overflowed "now -
// renewed_at". It saturates: silent for ever (watched, as any long-silent holder), or not at all.
BOOST_AUTO_TEST_CASE(a_renewed_at_at_the_int64_limits_neither_overflows_nor_decides) {
  auto p = confirming();
  acquire_fsm oldest("x", p);
  oldest.resume(in::start(t0));
  BOOST_TEST(oldest.resume(in::read(success(silent_since(std::numeric_limits<std::int64_t>::min())), t0))
      .what == kind::wait_until);
  p.wall_now_ms = std::numeric_limits<std::int64_t>::min();
  acquire_fsm future("x", p);
  future.resume(in::start(t0));
  BOOST_TEST((future.resume(in::read(success(silent_since(std::numeric_limits<std::int64_t>::max())), t0))
      .ec == ml::errc::busy));
}

// A force-released lock's placeholder renews never: a confirming try watches it at once (its
// renewed_at is recent, so the silence hint alone would not), a plain try finds it busy.
BOOST_AUTO_TEST_CASE(a_confirming_try_watches_a_force_release_placeholder) {
  auto p = confirming();
  auto placeholder = held_by(broken_owner, 1, 4);
  placeholder.renewed_at_ms = 999'900;  // just broken
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  BOOST_TEST(f.resume(in::read(success(placeholder), t0)).what == kind::wait_until);
  BOOST_TEST(f.resume(in::read(success(placeholder), t0 + 1100ms)).what == kind::take);
  p.confirm_silent = false;
  acquire_fsm plain("x", p);
  plain.resume(in::start(t0));
  BOOST_TEST((plain.resume(in::read(success(placeholder), t0)).ec == ml::errc::busy));
}

// A document written by something else claims an expiry no mongolock holder
// could have written. The waiter clamps it to limits::min_expiry..max_expiry (and counts it for
// the driver to report) instead of taking over at once or overflowing its deadline.
BOOST_AUTO_TEST_CASE(an_expiry_below_the_minimum_is_waited_out_as_the_minimum) {
  for (const auto claimed : {0ms, -1ms, -3600000ms}) {
    acquire_fsm f("x", params());
    f.resume(in::start(t0));
    auto hostile = held_by("stranger", 5);
    hostile.held.expiry = claimed;
    BOOST_TEST(look(f, hostile, t0).what == kind::wait_until);
    BOOST_TEST(f.out_of_bounds_observations() == 1u);
    // Unclamped, 150 ms after the first look is past claimed + margin (100 ms).
    BOOST_TEST(look(f, hostile, t0 + 150ms).what == kind::wait_until, "claimed " << claimed.count());
    BOOST_TEST(look(f, hostile, t0 + 200ms).what == kind::take, "100 ms + margin, not sooner");
    BOOST_TEST(f.out_of_bounds_observations() == 1u, "counted once per observation, not per read");
  }
}

BOOST_AUTO_TEST_CASE(an_expiry_above_the_maximum_is_waited_out_as_the_maximum) {
  auto p = params();
  p.deadline = t0 + 48h;
  acquire_fsm f("x", p);
  f.resume(in::start(t0));
  auto hostile = held_by("stranger", 5);
  hostile.held.expiry = std::chrono::milliseconds{1'000'000'000'000};  // 31 years
  BOOST_TEST(look(f, hostile, t0).what == kind::wait_until);
  BOOST_TEST(look(f, hostile, t0 + 24h).what == kind::wait_until);
  BOOST_TEST(look(f, hostile, t0 + 24h + 100ms).what == kind::take);
  BOOST_TEST(f.out_of_bounds_observations() == 1u);
}

BOOST_AUTO_TEST_CASE(expiries_a_holder_may_write_are_not_reported) {
  acquire_fsm f("x", params());
  f.resume(in::start(t0));
  auto a = held_by("stranger", 5);
  a.held.expiry = ml::limits::min_expiry;
  f.resume(in::read(success(a), t0));
  auto b = held_by("stranger", 5, 1);
  b.held.expiry = ml::limits::max_expiry;
  f.resume(in::read(success(b), t0 + 1ms));
  BOOST_TEST(f.out_of_bounds_observations() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
