// Renewals queued behind waiters' reads in one FIFO, so 6,000 waiters on
// another lock made a holder lose its lease. Maintenance jobs now overtake queued acquisition
// jobs. A fake connector stands in for libmongoc (no server).
#include <boost/test/unit_test.hpp>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "store/worker_pool.hpp"

using mongolock::detail::lane;
using mongolock::detail::worker_pool;

BOOST_AUTO_TEST_CASE(maintenance_overtakes_queued_acquisition_traffic) {
  worker_pool pool([](const auto& body) { body(nullptr); }, 1);
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  std::mutex mu;
  std::vector<int> order;
  auto record = [&](int id) {
    return [&, id](mongoc_client_t*) {
      std::lock_guard g(mu);
      order.push_back(id);
    };
  };
  BOOST_REQUIRE(pool.post([opened](mongoc_client_t*) { opened.wait(); }));  // occupies the one worker
  for (int i = 0; i < 1000; ++i) BOOST_REQUIRE(pool.post(record(i)));
  BOOST_REQUIRE(pool.post(record(-1), lane::maintenance));
  gate.set_value();
  pool.join();
  BOOST_REQUIRE(order.size() == 1001u);
  BOOST_TEST(order.front() == -1);
  BOOST_TEST(order[1] == 0);  // acquisition traffic keeps its own order
  BOOST_TEST(order.back() == 999);
}

namespace {
// Both workers of `pool` run a job at the same time once, then go idle: observed, not assumed
// after a sleep (a loaded machine may take longer). While both jobs wait at the gate, every
// earlier sleep of either worker is counted and neither has gone back to sleep yet; each then
// goes back to the idle stack once, counted as it gets there.
void warm_up_two(worker_pool& pool) {
  std::promise<void> first, second, gate;
  auto opened = gate.get_future().share();
  BOOST_REQUIRE(pool.post([&, opened](mongoc_client_t*) { first.set_value(); opened.wait(); }));
  BOOST_REQUIRE(pool.post([&, opened](mongoc_client_t*) { second.set_value(); opened.wait(); }));
  first.get_future().wait();
  second.get_future().wait();
  const auto slept = pool.idle_waits();
  gate.set_value();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (pool.idle_waits() < slept + 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  BOOST_REQUIRE_MESSAGE(pool.idle_waits() == slept + 2, "both workers back in the idle stack");
}
}  // namespace

// The uncontended cycle is take, reply, release, reply: the next job is posted while the worker
// that ran the last one is still on its way back. Waking an idle worker for it cost a context
// switch per call (the scenario-1 cycle went from 255 to 208 us when that stopped).
BOOST_AUTO_TEST_CASE(a_job_posted_while_a_worker_finishes_is_left_to_it) {
  worker_pool pool([](const auto& body) { body(nullptr); }, 2);
  warm_up_two(pool);
  std::promise<void> posted;
  auto next_posted = posted.get_future().share();
  std::promise<std::thread::id> first_ran, next_ran;
  BOOST_REQUIRE(pool.post([&, next_posted](mongoc_client_t*) {
    worker_pool::done_blocking();
    first_ran.set_value(std::this_thread::get_id());
    next_posted.wait();  // the reply is out; the worker has not yet come back for more
  }));
  auto first = first_ran.get_future().get();
  BOOST_REQUIRE(pool.post([&](mongoc_client_t*) { next_ran.set_value(std::this_thread::get_id()); }));
  posted.set_value();
  auto next = next_ran.get_future();
  BOOST_REQUIRE(next.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  BOOST_TEST((next.get() == first), "the finishing worker took it; the idle one was not woken");
}

// ... but only as many jobs as there are finishing workers: a burst still wakes an idle one.
BOOST_AUTO_TEST_CASE(a_burst_still_wakes_an_idle_worker) {
  worker_pool pool([](const auto& body) { body(nullptr); }, 2);
  warm_up_two(pool);
  std::promise<void> posted, burst_done;
  auto both_posted = posted.get_future().share();
  auto done = burst_done.get_future().share();
  std::promise<bool> ran_meanwhile;
  std::promise<void> finishing;
  BOOST_REQUIRE(pool.post([&, both_posted, done](mongoc_client_t*) {
    worker_pool::done_blocking();
    finishing.set_value();
    both_posted.wait();
    ran_meanwhile.set_value(done.wait_for(std::chrono::seconds(2)) == std::future_status::ready);
  }));
  finishing.get_future().wait();
  BOOST_REQUIRE(pool.post([](mongoc_client_t*) {}));
  BOOST_REQUIRE(pool.post([&](mongoc_client_t*) { burst_done.set_value(); }));
  posted.set_value();
  BOOST_TEST(ran_meanwhile.get_future().get(), "the second job of the burst woke the idle worker");
}

namespace {
// A job that ends its blocking part at once, as a store call whose reply is out, and tells when
// it has run.
worker_pool::job answered(std::promise<void>& ran) {
  return [&ran](mongoc_client_t*) {
    worker_pool::done_blocking();
    ran.set_value();
  };
}
}  // namespace

// The caller's next command follows the reply within microseconds (take then release, read then
// take): the worker that sent the reply waits for it on the CPU instead of going to sleep, so
// the command is not behind a wake-up. A long linger here makes the check independent of timing.
BOOST_AUTO_TEST_CASE(a_command_following_a_reply_finds_its_worker_awake) {
  worker_pool pool([](const auto& body) { body(nullptr); }, 1, std::chrono::seconds(30));
  std::promise<void> warm;
  BOOST_REQUIRE(pool.post(answered(warm)));
  warm.get_future().wait();
  const auto slept_before = pool.idle_waits();
  for (int i = 0; i < 20; ++i) {
    std::promise<void> ran;
    BOOST_REQUIRE(pool.post(answered(ran)));
    ran.get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the caller handles the reply
  }
  BOOST_TEST(pool.idle_waits() == slept_before, "the worker slept between a reply and the next command");
  pool.join();  // a lingering worker stops lingering for join()
}

// ... but only for that short while: then it sleeps like any idle worker.
BOOST_AUTO_TEST_CASE(a_worker_sleeps_once_its_linger_is_over) {
  worker_pool pool([](const auto& body) { body(nullptr); }, 1, std::chrono::milliseconds(1));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto wait_for_sleeps = [&](std::uint64_t n) {
    while (pool.idle_waits() < n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  wait_for_sleeps(1);  // asleep before any work
  std::promise<void> ran;
  BOOST_REQUIRE(pool.post(answered(ran)));
  ran.get_future().wait();
  wait_for_sleeps(2);
  BOOST_TEST(pool.idle_waits() == 2u, "asleep again after the job and its linger");
}
