// Local hand-off (docs/design.md section 7): releasing a lock that a parked acquire of the same
// provider waits for hands it over in one update (new owner, token + 1), never freeing it in
// between. On the in-memory store, where every command is counted and can be broken.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

std::size_t commands_since(engine& e, std::size_t from) { return e.store->calls().size() - from; }

// NAME held, one acquire parked behind it, and the hand-off of the release meets `f`: what the
// release said, and the waiter once it has its answer (within `within`).
struct faulted_hand_off {
  ml::lease first;
  std::shared_ptr<waiter> next;
  error_code released;
};
faulted_hand_off hand_off_meeting(engine& e, const std::string& name, fault f, std::chrono::milliseconds within) {
  faulted_hand_off h;
  auto [ec, first] = e.acquire(name, 1s);
  BOOST_REQUIRE(!ec);
  h.next = wait_for_lock(e.p, name);
  e.run_for(30ms);
  e.store->inject(op::take, f);
  h.released = e.release(first);
  BOOST_REQUIRE(run_until(e, [&] { return h.next->done; }, within));
  h.first = std::move(first);
  return h;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(handoff_suite)

// One command from release to the next holder: the take that names the new owner. No release,
// no read; the token goes up by one; the old holder's release succeeds.
BOOST_AUTO_TEST_CASE(a_release_hands_the_lock_to_the_next_local_waiter_in_one_command) {
  engine e;
  auto [ec, first] = e.acquire("pass", 1s);
  BOOST_REQUIRE(!ec);
  auto next = wait_for_lock(e.p, "pass");
  e.run_for(30ms);
  const auto before = e.store->calls().size();
  BOOST_TEST(!e.release(first));
  BOOST_REQUIRE(run_until(e, [&] { return next->done; }, 1s));
  BOOST_TEST(!next->ec, next->ec.message());
  const auto calls = e.store->calls();
  BOOST_TEST(commands_since(e, before) == 1u, "commands from the release to the grant");
  BOOST_TEST((calls.back().what == op::take));
  BOOST_TEST(next->held.fencing_token() == first.fencing_token() + 1);
  BOOST_TEST(next->held.owner_id() != first.owner_id());
  BOOST_TEST(e.store->get("pass").held.owner == next->held.owner_id());
  BOOST_TEST(next->held.held());
  // And the new lease is a lease like any other: it renews, and its release frees the lock.
  e.run_for(500ms);
  BOOST_TEST(e.store->get("pass").held.beat >= 1);
  BOOST_TEST(!e.release(next->held));
  BOOST_TEST(e.store->get("pass").held.owner.empty());
}

// A chain of hand-offs: four waiters, four single-command hand-offs, tokens one apart.
BOOST_AUTO_TEST_CASE(a_line_of_waiters_is_served_by_hand_offs) {
  engine e;
  auto [ec, first] = e.acquire("chain", 1s);
  BOOST_REQUIRE(!ec);
  std::vector<std::shared_ptr<waiter>> line;
  for (int i = 0; i < 4; ++i) line.push_back(wait_for_lock(e.p, "chain"));
  e.run_for(30ms);
  const auto before = e.store->calls().size();
  auto token = first.fencing_token();
  BOOST_TEST(!e.release(first));
  for (auto& w : line) {
    BOOST_REQUIRE(run_until(e, [&] { return w->done; }, 1s));
    BOOST_TEST(w->held.fencing_token() == ++token);
    BOOST_TEST(!e.release(w->held));
  }
  BOOST_TEST(commands_since(e, before) == 5u, "four hand-offs and the last release");
}

// The hand-off's reply is lost (applied or not, nobody knows): the old holder hears
// ambiguous_result, nothing is granted on it, and the waiter still gets the lock afterwards.
BOOST_AUTO_TEST_CASE(an_ambiguous_hand_off_grants_nothing_and_the_waiter_still_gets_the_lock) {
  engine e;
  auto h = hand_off_meeting(e, "lost-reply", {fault::kind::stream_error_after}, 3s);
  BOOST_TEST((h.released == ml::errc::ambiguous_result));
  BOOST_TEST(!h.next->ec, h.next->ec.message());
  BOOST_TEST(e.store->get("lost-reply").held.owner == h.next->held.owner_id());
  BOOST_TEST(h.next->held.fencing_token() > h.first.fencing_token() + 1, "the applied hand-off was given back first");
  BOOST_TEST(!e.release(h.next->held));
}

// A write-concern error on the hand-off is never a grant (the update may be rolled back).
BOOST_AUTO_TEST_CASE(a_hand_off_with_a_write_concern_error_is_never_a_grant) {
  engine e;
  auto h = hand_off_meeting(e, "wce", {fault::kind::write_concern_error}, 3s);
  BOOST_TEST((h.released == ml::errc::ambiguous_result));
  BOOST_TEST(!h.next->ec);
  BOOST_TEST(h.next->held.fencing_token() > h.first.fencing_token() + 1);
  BOOST_TEST(!e.release(h.next->held));
}

// A hand-off whose reply comes after the new holder's own deadline (sent + expiry - margin):
// a late grant, given back; the old lease was released all the same; the waiter reads and takes.
BOOST_AUTO_TEST_CASE(a_late_hand_off_is_given_back_not_handed_out) {
  engine e(fast(1000ms));
  auto h = hand_off_meeting(e, "late", fault(fault::kind::hang, 1000ms), 4s);
  BOOST_TEST(!h.released, "released: the hand-off freed it from the old holder");
  BOOST_TEST(!h.next->ec, h.next->ec.message());
  BOOST_TEST(h.next->held.fencing_token() > h.first.fencing_token() + 1, "not the late one");
  BOOST_TEST(!e.release(h.next->held));
}

// The waiter was cancelled while its hand-off was in flight: it gets nothing, and the lock the
// hand-off gave it is released at once, not left to expire.
BOOST_AUTO_TEST_CASE(a_waiter_cancelled_during_its_hand_off_leaves_the_lock_free) {
  engine e;
  auto [ec, first] = e.acquire("gone", 1s);
  BOOST_REQUIRE(!ec);
  asio::cancellation_signal stop;
  auto next = wait_for_lock(e.p, "gone", std::nullopt, stop.slot());
  e.run_for(30ms);
  e.store->inject(op::take, fault(fault::kind::hang, 100ms));
  auto released = engine::ec_future([&, &first = first](auto h) { first.async_release(h); });
  e.run_for(30ms);
  stop.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(released, 1s));
  BOOST_TEST(!released.get());
  BOOST_REQUIRE(run_until(e, [&] { return next->done; }, 1s));
  BOOST_TEST((next->ec == asio::error::operation_aborted));
  e.run_for(100ms);
  BOOST_TEST(e.store->get("gone").held.owner.empty());
}

// The next waiter's own timeout runs during a hand-off: it completes on time, and the lock the
// hand-off took for it, once applied, is released.
BOOST_AUTO_TEST_CASE(a_waiter_timing_out_during_a_slow_hand_off_completes_on_time) {
  // 5 s leases: the hand-off's reply, 2 s late, is within its bound (sent + E - m, docs/design.md
  // section 4), so the lock it took is given back because its waiter left meanwhile (timed out),
  // the case this test is about, and not for coming late (a_late_hand_off_is_given_back_not_...).
  engine e(fast(5000ms));
  auto [ec, first] = e.acquire("slow", 1s);
  BOOST_REQUIRE(!ec);
  auto out = std::make_shared<waiter>();
  e.lock("slow").async_acquire_for(150ms, [out](error_code c, ml::lease got) {
    out->ec = c;
    out->held = std::move(got);
    out->done = true;
  });
  const auto t0 = steady::now();
  e.run_for(30ms);
  // The hand-off's reply takes 2 s: completing when it answers would take 2 s or more, on time
  // 150 ms; 1200 ms leaves a stalled run room between the two.
  e.store->inject(op::take, fault(fault::kind::hang, 2000ms));
  auto released = engine::ec_future([&, &first = first](auto h) { first.async_release(h); });
  BOOST_REQUIRE(run_until(e, [&] { return out->done; }, 4s));
  BOOST_TEST((out->ec == ml::errc::timeout), out->ec.message());
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
  BOOST_TEST((took < 1200ms), took.count() << " ms: completed at its own deadline, not when the hand-off answered");
  BOOST_REQUIRE(e.wait(released, 5s));  // the release completes once the hand-off answers, 2 s in
  BOOST_TEST(!released.get());
  BOOST_TEST(run_until(e, [&] { return e.store->get("slow").held.owner.empty(); }, 2s),
             "the hand-off's lock was given back");
}

BOOST_AUTO_TEST_SUITE_END()
