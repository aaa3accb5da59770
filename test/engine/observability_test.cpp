// What a provider tells its operator: gauges and a wait-time histogram in
// snapshot(), and a log threshold below which no line is even built.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <numeric>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

BOOST_AUTO_TEST_SUITE(observability_suite)

// time_left is the local deadline minus now: expiry - margin from the take's send time, moved on
// by each renewal, 0 once the lease has ended.
BOOST_AUTO_TEST_CASE(time_left_is_the_local_deadline_and_moves_with_renewals) {
  engine e;  // 1 s leases, 100 ms margin, renewals every 333 ms
  const auto before = steady::now();
  auto [ec, held] = e.acquire("left", 1s);
  BOOST_REQUIRE(!ec);
  // The take was sent after `before`, and time_left() is read before `spent` is: the deadline
  // minus the read's time is at least 900 ms - spent, with no slack (time_left() rounds down,
  // spent up), however long this thread stalls.
  const auto left = held.time_left();
  const auto read_by = steady::now();
  const auto spent = std::chrono::ceil<std::chrono::milliseconds>(read_by - before);
  BOOST_TEST(left <= 900ms);
  BOOST_TEST(left >= 900ms - spent, left.count() << " ms, " << spent.count() << " ms after the call");
  const auto first_deadline_by = read_by + left + 1ms;  // the first deadline is before this
  e.run_for(600ms);  // a renewal or more since (every 333 ms)
  // The deadline itself, not the time left, is compared: a stall after run_for shortens the
  // time left, not the deadline. now + time_left() read after it is at most the deadline, as
  // long as the deadline is ahead (time_left() is 0 past it, which would make this now).
  const auto now = steady::now();
  const auto left_now = held.time_left();
  BOOST_REQUIRE(left_now > 0ms);
  const auto moved = std::chrono::duration_cast<std::chrono::milliseconds>(now + left_now - first_deadline_by);
  BOOST_TEST(moved > 100ms, "moved on by a renewal: " << moved.count() << " ms later");
  BOOST_TEST(!e.release(held));
  BOOST_TEST(held.time_left() == 0ms);
  BOOST_TEST(ml::lease{}.time_left() == 0ms);
}

BOOST_AUTO_TEST_CASE(gauges_count_leases_held_and_acquires_waiting) {
  engine e;
  auto [ec, held] = e.acquire("g", 1s);
  BOOST_REQUIRE(!ec);
  BOOST_TEST(e.p->snapshot().leases_held == 1u);
  BOOST_TEST(e.p->snapshot().acquires_in_progress == 0u);

  asio::cancellation_signal stop;
  auto done = std::make_shared<std::promise<error_code>>();
  auto waited = done->get_future();
  e.lock("g").async_acquire_for(
      10s, asio::bind_cancellation_slot(stop.slot(), [done](error_code c, ml::lease) { done->set_value(c); }));
  e.run_for(50ms);
  BOOST_TEST(e.p->snapshot().acquires_in_progress == 1u, "one waiter on a held lock");
  stop.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(waited, 1s));
  BOOST_TEST(e.p->snapshot().acquires_in_progress == 0u);

  BOOST_TEST(!e.release(held));
  const auto s = e.p->snapshot();
  BOOST_TEST(s.leases_held == 0u);
  BOOST_TEST(std::accumulate(s.wait_histogram.begin(), s.wait_histogram.end(), std::uint64_t{0}) == s.acquisitions);
  BOOST_TEST(s.wait_histogram.back() == 0u, "no acquire here took over 10 s");
}

BOOST_AUTO_TEST_CASE(wait_histogram_buckets_by_bound) {
  engine e;
  e.p->count_wait(500us);   // <= 1 ms
  e.p->count_wait(1ms);     // <= 1 ms (bounds are inclusive)
  e.p->count_wait(50ms);    // <= 100 ms
  e.p->count_wait(20s);     // the rest
  const auto h = e.p->snapshot().wait_histogram;
  BOOST_TEST(h[0] == 2u);
  BOOST_TEST(h[1] == 0u);
  BOOST_TEST(h[2] == 1u);
  BOOST_TEST(h[5] == 1u);
}

BOOST_AUTO_TEST_CASE(lines_below_the_threshold_are_neither_built_nor_delivered) {
  asio::io_context io;
  std::vector<std::string> lines;
  auto store = std::make_shared<test::memory_store>(io.get_executor());
  auto p = std::make_shared<ml::detail::provider_impl>(
      io.get_executor(), store, fast(),
      [&](ml::log_level, std::string_view line) { lines.emplace_back(line); }, ml::log_level::warning);
  bool built = false;
  p->log(ml::log_level::info, [&] {
    built = true;
    return std::string("routine");
  });
  p->log(ml::log_level::warning, [] { return std::string("worth a look"); });
  BOOST_TEST(!built);
  BOOST_TEST(lines == (std::vector<std::string>{"worth a look"}));
}

// A failure the caller gets back (here an invalid name) is not also logged as an error.
BOOST_AUTO_TEST_CASE(returned_failures_are_logged_at_debug_only) {
  asio::io_context io;
  std::vector<ml::log_level> levels;
  auto store = std::make_shared<test::memory_store>(io.get_executor());
  auto p = std::make_shared<ml::detail::provider_impl>(
      io.get_executor(), store, fast(), [&](ml::log_level l, std::string_view) { levels.push_back(l); },
      ml::log_level::debug);
  error_code got;
  ml::detail::access::make_lock(p, "").async_try_acquire([&](error_code ec, ml::lease) { got = ec; });
  io.run_for(1s);
  BOOST_TEST((got == ml::errc::invalid_name));
  BOOST_TEST(std::count(levels.begin(), levels.end(), ml::log_level::error) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
