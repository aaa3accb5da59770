// A scheduled job's two lease operations (docs/design.md section 13): the record of a completed
// run (lease::async_record_completion) and the hold (lease::async_release_after).
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "engine_harness.hpp"

using namespace test;

namespace {

error_code record(engine& e, ml::lease& l) {
  auto f = engine::ec_future([&](auto h) { l.async_record_completion(h); });
  BOOST_REQUIRE(e.wait(f, 5s));
  return f.get();
}

// "job", acquired.
ml::lease held(engine& e) {
  auto [ec, l] = e.acquire("job", 1s);
  BOOST_REQUIRE(!ec);
  return std::move(l);  // a structured binding is not a plain local: no copy elision to prevent
}

// The lock taken from `l`'s holder by another owner, as a takeover after expiry leaves it.
void taken_over(engine& e, const std::string& name) {
  auto d = e.store->get(name);
  d.held.owner = "another";
  d.held.token += 1;
  e.store->put(name, d);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scheduled_suite)

BOOST_AUTO_TEST_CASE(a_recorded_run_stays_in_the_document_across_later_takes_and_releases) {
  engine e;
  auto first = held(e);
  BOOST_TEST(!record(e, first));
  BOOST_TEST(e.store->get("job").last_run_token == first.fencing_token());
  BOOST_TEST(!e.release(first));
  auto second = held(e);
  BOOST_TEST(e.store->get("job").last_run_token == first.fencing_token(), "the next take keeps the record");
  BOOST_TEST(!e.release(second));
  BOOST_TEST(e.store->get("job").last_run_token == first.fencing_token(), "so does a release");
}

BOOST_AUTO_TEST_CASE(a_lease_whose_lock_was_taken_over_records_nothing) {
  engine e;
  auto l = held(e);
  taken_over(e, "job");
  BOOST_TEST((record(e, l) == ml::errc::lease_lost));
  BOOST_TEST(e.store->get("job").last_run_token == 0);
}

BOOST_AUTO_TEST_CASE(a_released_or_empty_lease_records_nothing) {
  engine e;
  auto l = held(e);
  BOOST_TEST(!e.release(l));
  BOOST_TEST((record(e, l) == ml::errc::not_held));
  ml::lease empty;
  BOOST_TEST((record(e, empty) == ml::errc::not_held));
  BOOST_TEST(e.store->get("job").last_run_token == 0);
}

BOOST_AUTO_TEST_CASE(a_record_whose_reply_was_lost_is_ambiguous) {
  engine e;
  auto l = held(e);
  e.store->inject(op::record_run, {fault::kind::write_concern_error});
  BOOST_TEST((record(e, l) == ml::errc::ambiguous_result));
}

BOOST_AUTO_TEST_CASE(release_after_holds_the_lock_renewed_until_the_hold_is_over) {
  engine e(fast(300ms));
  auto l = held(e);
  const auto owner = l.owner_id();
  auto f = engine::ec_future([&](auto h) { l.async_release_after(1200ms, h); });
  e.run_for(800ms);  // more than two leases of 300 ms: held only if renewed
  BOOST_TEST((f.wait_for(0s) != std::future_status::ready), "still holding");
  BOOST_TEST(e.store->get("job").held.owner == owner);
  BOOST_REQUIRE(e.wait(f, 2s));
  BOOST_TEST(!f.get());
  BOOST_TEST(l.held_for() >= 1200ms);
  BOOST_TEST(e.store->get("job").held.owner.empty(), "released once the hold was over");
}

BOOST_AUTO_TEST_CASE(release_after_a_hold_already_over_releases_at_once) {
  engine e;
  auto l = held(e);
  e.run_for(50ms);
  auto f = engine::ec_future([&](auto h) { l.async_release_after(10ms, h); });
  BOOST_REQUIRE(e.wait(f, 200ms));
  BOOST_TEST(!f.get());
  BOOST_TEST(e.store->get("job").held.owner.empty());
}

BOOST_AUTO_TEST_CASE(a_cancelled_hold_leaves_the_lease_held) {
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
    engine e;
    auto l = held(e);
    asio::cancellation_signal cancel;
    auto f = engine::ec_future([&](auto h) { l.async_release_after(10s, asio::bind_cancellation_slot(cancel.slot(), h)); });
    e.run_for(50ms);
    cancel.emit(type);
    BOOST_REQUIRE(e.wait(f, 1s));
    BOOST_TEST((f.get() == asio::error::operation_aborted));
    BOOST_TEST(l.held());
    BOOST_TEST(e.store->get("job").held.owner == l.owner_id());
    BOOST_TEST(!e.release(l));
  }
}

BOOST_AUTO_TEST_CASE(a_lease_lost_during_the_hold_is_reported_lost) {
  engine e(fast(300ms));
  auto l = held(e);
  auto f = engine::ec_future([&](auto h) { l.async_release_after(10s, h); });
  e.run_for(50ms);
  taken_over(e, "job");
  BOOST_REQUIRE(e.wait(f, 2s));  // the next renewal finds the lock gone
  BOOST_TEST((f.get() == ml::errc::lease_lost));
  BOOST_TEST(e.store->get("job").held.owner == "another", "nothing of the new holder's was touched");
}

BOOST_AUTO_TEST_SUITE_END()
