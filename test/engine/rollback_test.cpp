// A write seen before a failover rolled it back must not start anyone's observation window
// (docs/design.md sections 2 and 3): a waiter's window starts at a read of a committed state,
// and no write ever recreates a heartbeat a waiter may have seen. The in-memory store keeps a
// primary's latest state apart from what a majority acknowledged, and can roll back to it.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "engine_harness.hpp"

using namespace test;

BOOST_AUTO_TEST_SUITE(rollback_suite)

// The worked example of design.md section 3, shortened (E = 1 s, m = 100 ms): the holder's
// renewal lands on a primary about to step down and its reply is lost; a waiter's first read sees
// it; the failover rolls it back; the holder's retry, sent 450 ms after that read, lands again
// on the new primary. Had the waiter's window started at its read of the rolled-back renewal, it
// would take the lock 1.1 s after that read, while the holder's lease runs to 0.9 s after its
// retry: both inside for about 350 ms.
BOOST_AUTO_TEST_CASE(a_rolled_back_renewal_starts_no_observation_window) {
  engine e;
  auto [ec, held] = e.acquire("rb", 1s);
  BOOST_REQUIRE(!ec);
  e.store->inject(op::renew, fault(fault::kind::uncommitted, 400ms));
  e.store->inject(op::join_line, fault(fault::kind::hang, 600ms));  // the waiter's reads pause meanwhile
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::renew) == 1; }, 2s));
  const auto renewed = steady::now();
  auto them = other_provider(e);
  auto w = wait_for_lock(them, "rb");
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::read) >= 1; }, 1s));
  e.run_for(std::chrono::duration_cast<std::chrono::milliseconds>(renewed + 380ms - steady::now()));
  e.store->rollback();  // the failover, before the holder hears of its renewal
  // The holder's retry lands; then the holder goes quiet (its renewals reach no server).
  e.store->inject(op::renew, {fault::kind::pass});
  for (int i = 0; i < 20; ++i) e.store->inject(op::renew, {fault::kind::unavailable});
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::renew) >= 2; }, 3s));
  const auto retried = steady::now();
  BOOST_REQUIRE(run_until(e, [&] { return w->done; }, 4s));
  BOOST_REQUIRE_MESSAGE(!w->ec, w->ec.message());
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - retried);
  BOOST_TEST(!held.held(), "two holders: the waiter got the lock " << waited.count()
                                                                    << " ms after the holder's last renewal");
  BOOST_TEST(waited >= 900ms, waited.count() << " ms");
  e.release(w->held);  // its own renewals may meet the holder's leftover faults: no verdict here
}

// libmongoc resends a single-document write once, identically (docs/design.md section 2): a
// renewal whose first attempt met a failover lands again on the new primary, with its beat.
// Here the resend lands late, after the holder's own retry (a new beat): it restores the older
// (owner, token, beat) triple that a read of the old primary could have seen before the rollback.
// The holder then goes quiet. A waiter whose window had started at such a read would find the
// same triple again, take the lock E + m after that read, and overlap the holder's lease, which
// runs to E - m after its retry. Only majority reads (section 3) keep the first attempt from
// starting a window: the waiter here first sees the triple when the resend lands, committed.
BOOST_AUTO_TEST_CASE(a_late_driver_resend_starts_no_window) {
  engine e;
  auto [ec, held] = e.acquire("rs", 1s);
  BOOST_REQUIRE(!ec);
  // The first renewal: rolled back at 300 ms, resent 350 ms later (after the holder's retry, due
  // 41 to 83 ms after its ambiguous reply); the retry lands; then the holder reaches no server:
  // neither its renewals nor the two releases it tries after its deadline (2m and 2m + 250 ms
  // after it), so the waiter gets the lock by its own observation window, not from a release.
  e.store->inject(op::renew, fault::resend(300ms, 350ms));
  e.store->inject(op::renew, {fault::kind::pass});
  for (int i = 0; i < 20; ++i) e.store->inject(op::renew, {fault::kind::unavailable});
  for (int i = 0; i < 2; ++i) e.store->inject(op::release, {fault::kind::unavailable});
  e.store->inject(op::join_line, fault(fault::kind::hang, 700ms));  // the waiter's reads pause meanwhile
  const auto from = e.store->calls().size();
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::renew) == 1; }, 2s));
  const auto first = e.store->get("rs").held;  // the first attempt, on the old primary only
  auto them = other_provider(e);
  auto w = wait_for_lock(them, "rs");
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::renew) >= 2; }, 3s));
  const auto retried = calls_since(e, from, op::renew).at(1).at;  // the last renewal that landed
  BOOST_REQUIRE(e.store->get("rs").held.beat != first.beat);
  BOOST_REQUIRE(run_until(e, [&] { return e.store->get("rs").held.beat == first.beat; }, 3s));
  BOOST_REQUIRE_MESSAGE(!w->done, "the resend must land while the waiter waits");
  BOOST_TEST(e.store->get("rs").held.owner == first.owner);
  BOOST_TEST(e.store->get("rs").held.token == first.token);
  BOOST_REQUIRE(run_until(e, [&] { return w->done; }, 4s));
  BOOST_REQUIRE_MESSAGE(!w->ec, w->ec.message());
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - retried);
  BOOST_TEST_MESSAGE("the waiter took the lock " << waited.count() << " ms after the holder's last renewal");
  BOOST_TEST(!held.held(), "two holders: the waiter got the lock " << waited.count()
                                                                    << " ms after the holder's last renewal");
  BOOST_TEST(waited >= 1000ms, waited.count() << " ms");
  e.release(w->held);  // its own renewals may meet the holder's leftover faults: no verdict here
}

BOOST_AUTO_TEST_SUITE_END()
