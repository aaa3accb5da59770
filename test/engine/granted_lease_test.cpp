// A granted acquire keeps its lease: whatever became of its place in the line (a hand-off that
// came too late and was given back, a join that lost the ticket race, a join that never landed),
// the lease it was granted is never freed by its own clean-up (docs/design.md section 7, point 10).
// Each case holds the waiter's provider still, as a stalled process would be, while the others
// move the lock, then lets it run: the lock it ends up with must stay its own.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "engine_harness.hpp"

using namespace test;

namespace {

using provider_ptr = std::shared_ptr<ml::detail::provider_impl>;

// A provider on its own io_context, run only when the test says so: a process that can be frozen.
struct frozen_process {
  asio::io_context io;
  provider_ptr p;
  explicit frozen_process(engine& e) : p(std::make_shared<ml::detail::provider_impl>(io.get_executor(), e.store, fast(), nullptr)) {}
  void run_one() {
    if (io.stopped()) io.restart();
    io.run_one_for(1ms);
  }
};

// Runs the engine and the process together until `done()` or `limit`: checked after every
// handler of the process, so that it freezes right after the one that made `done()` true.
bool run_both_until(engine& e, frozen_process& f, const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = steady::now() + limit;
  while (!done() && steady::now() < end) {
    e.run_one();
    if (!done()) f.run_one();
  }
  return done();
}
void run_both_for(engine& e, frozen_process& f, std::chrono::milliseconds d) {
  run_both_until(e, f, [] { return false; }, d);
}

// The waiter holds the lock, and goes on holding it: the document names it through a while of
// renewals, and nobody else can take it meanwhile.
void keeps_its_lease(engine& e, frozen_process& f, waiter& w, const std::string& name) {
  BOOST_REQUIRE_MESSAGE(!w.ec, w.ec.message());
  BOOST_REQUIRE(w.held.held());
  run_both_for(e, f, 300ms);  // the clean-up after the grant has long answered
  BOOST_TEST(e.store->get(name).held.owner == w.held.owner_id(), "the lock was freed under its holder");
  BOOST_TEST(w.held.held());
  auto [ec, second] = e.acquire(name, std::nullopt);  // a try by another provider
  BOOST_TEST((ec == ml::errc::busy), "a second holder: " << ec.message());
  if (!ec) BOOST_TEST(!e.release(second));
  run_both_until(e, f, [&] { return false; }, 1ms);
}

std::size_t count_of(engine& e, op what) { return e.store->count(what); }

}  // namespace

BOOST_AUTO_TEST_SUITE(granted_lease_suite)

// A head stalled while the lock was handed to it reads the hand-off too late to use it and gives
// it back; it then takes the free lock itself. Its entry went with the hand-off, so its leave
// after the grant finds nothing: that must not free the lock it now holds.
BOOST_AUTO_TEST_CASE(a_slow_head_that_gave_its_hand_off_back_keeps_the_lock_it_then_took) {
  engine e;
  frozen_process head(e);
  auto us = other_provider(e);
  auto [ec, setup] = e.acquire("slow", 1s);
  BOOST_REQUIRE(!ec);
  // `us` takes the lock with the head in line behind it, so that its release hands it over.
  auto first = wait_for_lock(us, "slow");
  BOOST_REQUIRE(run_both_until(e, head, [&] { return e.store->get("slow").line.size() == 1; }, 2s));
  auto w = wait_for_lock(head.p, "slow");
  BOOST_REQUIRE(run_both_until(e, head, [&] { return e.store->get("slow").line.size() == 2; }, 2s));
  run_both_for(e, head, 3ms);  // the join's reply is in
  const auto head_owner = e.store->get("slow").line.back().owner;
  BOOST_TEST(!e.release(setup));
  BOOST_REQUIRE(run_until(e, [&] { return first->done; }, 2s));
  BOOST_REQUIRE(!first->ec);
  // Frozen: the hand-off lands, and the head's lease would have ended before it reads it.
  BOOST_TEST(!e.release(first->held));
  BOOST_REQUIRE(e.store->get("slow").held.owner == head_owner);
  BOOST_REQUIRE(e.store->get("slow").line.empty());
  e.run_for(1100ms);
  const auto gave_back = count_of(e, op::release);
  BOOST_REQUIRE(run_both_until(e, head, [&] { return w->done; }, 3s));
  BOOST_TEST(count_of(e, op::release) == gave_back + 1, "the late hand-off was given back");
  keeps_its_lease(e, head, *w, "slow");
}

// A join that lost the ticket race (another waiter joined with it first) put nothing in the line;
// the waiter takes the lock later, freed, and has no entry to leave.
BOOST_AUTO_TEST_CASE(a_waiter_whose_join_lost_the_ticket_race_keeps_the_lock_it_took) {
  engine e;
  frozen_process slow(e);
  auto them = other_provider(e);
  auto [ec, first] = e.acquire("race", 1s);
  BOOST_REQUIRE(!ec);
  e.store->inject(op::read, fault(fault::kind::hang, 100ms));  // its first read shows the line as it was
  auto w = wait_for_lock(slow.p, "race");
  BOOST_REQUIRE(run_both_until(e, slow, [&] { return count_of(e, op::read) >= 1; }, 1s));
  auto x = wait_for_lock(them, "race");
  // Frozen as its join goes out (it raced: its reply waits, unread).
  BOOST_REQUIRE(run_both_until(e, slow, [&] { return count_of(e, op::join_line) >= 2; }, 2s));
  BOOST_REQUIRE_MESSAGE(e.store->get("race").line.size() == 1u, "the other waiter's join only");
  // Frozen: the other waiter gets the lock by hand-off and frees it; the line is empty.
  BOOST_TEST(!e.release(first));
  BOOST_REQUIRE(run_until(e, [&] { return x->done; }, 2s));
  BOOST_REQUIRE(!x->ec);
  BOOST_TEST(!e.release(x->held));
  BOOST_REQUIRE(e.store->get("race").held.owner.empty());
  BOOST_REQUIRE(run_both_until(e, slow, [&] { return w->done; }, 2s));
  keeps_its_lease(e, slow, *w, "race");
}

// A join whose request failed before the server saw it: the waiter cannot know that, so it counts
// it as joined; it takes the lock freed meanwhile and has no entry to leave.
BOOST_AUTO_TEST_CASE(a_waiter_whose_join_never_landed_keeps_the_lock_it_took) {
  engine e;
  frozen_process slow(e);
  auto [ec, first] = e.acquire("lost", 1s);
  BOOST_REQUIRE(!ec);
  e.store->inject(op::join_line, {fault::kind::stream_error_before});
  auto w = wait_for_lock(slow.p, "lost");
  // Frozen as its join goes out (its reply, unknown, waits unread).
  BOOST_REQUIRE(run_both_until(e, slow, [&] { return count_of(e, op::join_line) >= 1; }, 2s));
  BOOST_REQUIRE(e.store->get("lost").line.empty());
  BOOST_TEST(!e.release(first));  // frozen: a plain release, nobody in line
  BOOST_REQUIRE(e.store->get("lost").held.owner.empty());
  BOOST_REQUIRE(run_both_until(e, slow, [&] { return w->done; }, 2s));
  keeps_its_lease(e, slow, *w, "lost");
}

// A take abandoned at its bound that never landed, and whose reply (an error after sending, so
// "may have landed") comes 1.3 s later: meanwhile the same acquire took the lock with a second
// take. The late reply's give-back must not free that lease: the second take carries a token
// above the abandoned one's, so a release of the abandoned (owner, token) matches nothing.
BOOST_AUTO_TEST_CASE(a_late_reply_of_an_abandoned_take_never_frees_the_lease_taken_after_it) {
  engine e;  // expiry 1 s, margin 100 ms: a take is abandoned 900 ms after it was sent
  e.store->put("late", free_doc(5));
  e.store->inject(op::take, fault(fault::kind::stream_error_before, 1300ms));
  auto w = wait_for_lock(e.p, "late");
  BOOST_REQUIRE(run_until(e, [&] { return w->done; }, 3s));
  BOOST_REQUIRE_MESSAGE(!w->ec, w->ec.message());
  const auto owner = w->held.owner_id();
  BOOST_REQUIRE(e.store->get("late").held.owner == owner);
  BOOST_TEST(w->held.fencing_token() > 6, "the second take reused the abandoned take's token 6");
  // The late reply comes, and its give-back (with retries) runs.
  const bool freed = run_until(e, [&] { return e.store->get("late").held.owner != owner; }, 1500ms);
  BOOST_TEST(!freed, "the lock was freed under its holder");
  BOOST_TEST(w->held.held());
}

BOOST_AUTO_TEST_SUITE_END()
