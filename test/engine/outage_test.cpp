// An election or a primary's crash (docs/design.md section 4): for a while no server can be
// selected, and every call takes the selection timeout to say so. A waiting acquire with time left
// rides it out; one whose deadline comes first ends there with timeout and the server as its
// reason, and so do the acquires parked behind it, each at its own deadline. The memory store's
// window is a tenth of the real figures (a 1.2 s outage, 0.5 s selections): the same arithmetic.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include <future>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;

BOOST_AUTO_TEST_SUITE(outage_suite)

// Through the provider's first contact with the server, and through the acquire's own calls.
BOOST_AUTO_TEST_CASE(an_acquire_with_time_left_is_granted_after_the_outage) {
  for (const bool contacted : {false, true}) {
    BOOST_TEST_CONTEXT((contacted ? "a provider that reached the server before" : "a new provider")) {
      engine e;
      if (contacted) {
        auto [ec, l] = e.acquire("outage", 1000ms);
        BOOST_REQUIRE(!ec);
        BOOST_REQUIRE(!e.release(l));
      }
      e.store->unreachable_for(1200ms, 500ms);
      const auto start = steady::now();
      auto [ec, l] = e.acquire("outage", 6000ms, 8s);
      const auto took = steady::now() - start;
      BOOST_TEST(!ec, ec.message());
      BOOST_TEST(l.held());
      BOOST_TEST((took >= 1200ms), "granted only once a server answered");
      BOOST_TEST((took < 3000ms), "and soon after: " << took / 1ms << " ms");
      if (l.held()) BOOST_TEST(!e.release(l));
    }
  }
}

BOOST_AUTO_TEST_CASE(an_acquire_whose_bound_ends_first_fails_there_with_timeout_and_the_server_as_reason) {
  engine e;
  {
    auto [ec, l] = e.acquire("bounded", 1000ms);  // the provider has reached the server
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE(!e.release(l));
  }
  e.store->unreachable_for(1200ms, 100ms);
  // One that has the name's turn and four parked behind it, all with the same bound: each ends at
  // its own deadline, none waits out another's selections after it.
  std::vector<std::shared_ptr<waiter>> all;
  std::vector<ml::diagnostics> why(5);
  const auto start = steady::now();
  for (int i = 0; i < 5; ++i) {
    auto out = std::make_shared<waiter>();
    e.lock("bounded").async_acquire_for(300ms, why[i], [out](error_code ec, ml::lease got) {
      out->ec = ec;
      out->held = std::move(got);
      out->done = true;
    });
    all.push_back(out);
  }
  BOOST_REQUIRE(run_until(e, [&] { return std::ranges::all_of(all, [](auto& w) { return w->done; }); }, 3s));
  const auto took = steady::now() - start;
  for (int i = 0; i < 5; ++i) {
    BOOST_TEST_CONTEXT("acquire " << i) {
      BOOST_TEST((all[i]->ec == ml::errc::timeout), all[i]->ec.message());
      if (i == 0) BOOST_TEST(why[i].reason.find("no server answered in the last") != std::string::npos, why[i].reason);
    }
  }
  // One after another they would take 5 x 300 ms; the slack is for a sanitizer's pauses (up to 0.9 s).
  BOOST_TEST((took < 1400ms), "all by their 300 ms bound, not one after another: " << took / 1ms << " ms");
}

// A semaphore's wait (and so a rw_lock reader's) rides it out as a lock's does: its first look is
// a try of a permit, and no server sends it on to the wait on every permit.
BOOST_AUTO_TEST_CASE(a_semaphore_wait_is_granted_after_the_outage) {
  engine e;
  auto sem = ml::detail::access::make_provider(e.p).create_semaphore("pool", 2);
  auto acquire = [&](std::chrono::milliseconds bound) {
    auto done = std::make_shared<std::promise<std::tuple<error_code, ml::lease>>>();
    auto f = done->get_future();
    sem.async_acquire_for(bound, [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); });
    BOOST_REQUIRE(e.wait(f, 8s));
    return f.get();
  };
  {
    auto [ec, l] = acquire(1000ms);  // declared, and the provider has reached the server
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE(!e.release(l));
  }
  e.store->unreachable_for(1000ms, 300ms);
  const auto start = steady::now();
  auto [ec, l] = acquire(5000ms);
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST((steady::now() - start >= 1000ms));
  if (l.held()) BOOST_TEST(!e.release(l));
}

BOOST_AUTO_TEST_CASE(a_try_that_finds_no_server_fails_at_once_with_server_unavailable) {
  engine e;
  e.store->unreachable_for(1200ms, 100ms);
  auto [ec, l] = e.acquire("tried", std::nullopt);
  BOOST_TEST((ec == ml::errc::server_unavailable), ec.message());
}

BOOST_AUTO_TEST_SUITE_END()
