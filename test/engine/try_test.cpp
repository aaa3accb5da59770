// A bounded try: try_options::within bounds the whole try, and confirming a
// silent holder happens only when asked for.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

std::future<std::tuple<error_code, ml::lease>> try_acquire(engine& e, const std::string& name, ml::try_options o) {
  auto done = std::make_shared<std::promise<std::tuple<error_code, ml::lease>>>();
  e.lock(name).async_try_acquire(o, [done](error_code ec, ml::lease l) { done->set_value({ec, std::move(l)}); });
  return done->get_future();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(try_suite)

BOOST_AUTO_TEST_CASE(within_bounds_a_try_against_a_hung_server) {
  engine e;
  e.store->inject(op::take, {fault::kind::hang, 3000ms});
  const auto started = steady::now();
  auto f = try_acquire(e, "hung", {.within = 200ms});
  BOOST_REQUIRE(e.wait(f, 5s));
  auto [ec, l] = f.get();
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  BOOST_TEST((steady::now() - started < 1s));  // not the hung read's 3 s
}

BOOST_AUTO_TEST_CASE(a_plain_try_is_busy_at_once_for_a_long_silent_holder) {
  engine e;
  e.store->put("silent", held_by_a_silent_holder(200ms));
  auto f = try_acquire(e, "silent", {});
  BOOST_REQUIRE(e.wait(f, 5s));
  BOOST_TEST((std::get<0>(f.get()) == ml::errc::busy));
  BOOST_TEST(e.store->count(op::read) == 1u);  // one look, no watching
}

BOOST_AUTO_TEST_CASE(a_confirming_try_takes_a_silent_holder_after_one_window) {
  engine e;  // margin 100 ms
  e.store->put("silent", held_by_a_silent_holder(200ms));
  const auto started = steady::now();
  auto f = try_acquire(e, "silent", {.confirm_silent_holder = true});
  BOOST_REQUIRE(e.wait(f, 5s));
  auto [ec, l] = f.get();
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST((steady::now() - started >= 300ms));  // watched for expiry + margin
  BOOST_TEST(l.fencing_token() > 3);
  e.release(l);
}

BOOST_AUTO_TEST_CASE(a_confirming_try_cut_short_by_its_bound_is_busy) {
  engine e;
  e.store->put("silent", held_by_a_silent_holder(2000ms));
  const auto started = steady::now();
  auto f = try_acquire(e, "silent", {.within = 250ms, .confirm_silent_holder = true});
  BOOST_REQUIRE(e.wait(f, 5s));
  BOOST_TEST((std::get<0>(f.get()) == ml::errc::busy));
  BOOST_TEST((steady::now() - started >= 200ms));  // it did watch, until the bound
  BOOST_TEST((steady::now() - started < 1s));
}

BOOST_AUTO_TEST_CASE(a_negative_bound_is_invalid) {
  engine e;
  auto f = try_acquire(e, "x", {.within = -1ms});
  BOOST_REQUIRE(e.wait(f, 5s));
  BOOST_TEST((std::get<0>(f.get()) == ml::errc::invalid_options));
}

BOOST_AUTO_TEST_SUITE_END()
