// A safer force release: by default the next holder waits out the old
// holder's lease, so the two never overlap; force_mode::immediate frees at once.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

std::future<std::tuple<error_code, std::string>> force(engine& e, const std::string& name, ml::force_mode mode) {
  auto done = std::make_shared<std::promise<std::tuple<error_code, std::string>>>();
  ml::detail::access::make_provider(e.p).async_force_release(name, mode,
                                                             [done](error_code ec, std::string owner) { done->set_value({ec, owner}); });
  return done->get_future();
}

// Holder A, waiter B, then a force release: when A learns it lost the lease and when B gets it.
struct takeover {
  steady::time_point forced, a_lost, b_granted;
  std::string taken_from, a_owner;
};

takeover force_while_waiting(engine& e, const std::string& name, ml::force_mode mode) {
  auto [ec, a] = e.acquire(name, 1s);
  BOOST_REQUIRE(!ec);
  takeover t;
  t.a_owner = a.owner_id();
  bool lost = false;
  a.async_wait_lost([&](error_code) {
    t.a_lost = steady::now();
    lost = true;
  });
  auto b = std::make_shared<std::promise<ml::lease>>();
  auto granted = b->get_future();
  e.lock(name).async_acquire_for(5s, [&, b](error_code got, ml::lease l) {
    BOOST_TEST(!got, got.message());
    t.b_granted = steady::now();
    b->set_value(std::move(l));
  });
  e.run_for(50ms);  // B is waiting
  t.forced = steady::now();
  auto f = force(e, name, mode);
  BOOST_REQUIRE(e.wait(f, 2s));
  t.taken_from = std::get<1>(f.get());
  BOOST_REQUIRE(e.wait(granted, 5s));
  while (!lost && steady::now() - t.forced < 3s) e.run_one();
  BOOST_REQUIRE(lost);
  auto l = granted.get();
  e.release(l);
  return t;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(force_suite)

BOOST_AUTO_TEST_CASE(by_default_the_next_holder_starts_only_after_the_old_one_stopped) {
  engine e;  // expiry 1 s, margin 100 ms, renewals every 333 ms
  auto t = force_while_waiting(e, "f", ml::force_mode::wait_out_holder);
  BOOST_TEST(t.taken_from == t.a_owner);
  BOOST_TEST((t.a_lost < t.b_granted), "overlap: B was granted before A knew it had lost the lease");
  BOOST_TEST((t.b_granted - t.forced >= 1050ms));  // one expiry + margin of observation
}

BOOST_AUTO_TEST_CASE(immediate_frees_at_once_and_may_overlap) {
  engine e;
  auto t = force_while_waiting(e, "f", ml::force_mode::immediate);
  BOOST_TEST(t.taken_from == t.a_owner);
  // At once: the default mode takes 1050 ms or more (above); 800 ms leaves a stalled run room.
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(t.b_granted - t.forced);
  BOOST_TEST((took < 800ms), took.count() << " ms from the force to B's grant");  // the documented overlap
}

BOOST_AUTO_TEST_CASE(a_broken_lock_shows_its_placeholder_and_is_broken_once) {
  engine e;
  auto [ec, a] = e.acquire("b", 1s);
  BOOST_REQUIRE(!ec);
  auto first = force(e, "b", ml::force_mode::wait_out_holder);
  BOOST_REQUIRE(e.wait(first, 2s));
  BOOST_TEST(std::get<1>(first.get()) == a.owner_id());
  BOOST_TEST(e.store->get("b").held.owner == ml::detail::broken_owner);
  BOOST_TEST(!e.store->get("b").meta);  // the old holder's host/pid/label go with it
  auto again = force(e, "b", ml::force_mode::wait_out_holder);
  BOOST_REQUIRE(e.wait(again, 2s));
  BOOST_TEST(std::get<1>(again.get()).empty());  // nothing left to take
  auto now = force(e, "b", ml::force_mode::immediate);
  BOOST_REQUIRE(e.wait(now, 2s));
  BOOST_TEST(std::get<1>(now.get()) == ml::detail::broken_owner);
  BOOST_TEST(e.store->get("b").held.owner.empty());
}

BOOST_AUTO_TEST_SUITE_END()
