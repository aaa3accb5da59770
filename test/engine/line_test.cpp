// The lock's waiting line (docs/design.md section 7): waiting acquires join it once, the first in
// line takes the lock when it is free, a head that never comes loses its place after one window,
// and tries ignore it. acquire_fsm without I/O, then two providers on the in-memory store.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <limits>
#include <map>

#include "sansio/acquire_fsm.hpp"
#include "fsm_params.hpp"
#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...
using namespace test::line_world;

namespace {

ml::detail::acquire_params params(bool try_once = false) { return test::fsm_params(t0, me, try_once); }

}  // namespace

BOOST_AUTO_TEST_SUITE(line_suite)

BOOST_AUTO_TEST_CASE(a_waiter_joins_the_line_once_with_the_ticket_it_read) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc(other, {}, 7)), t0));
  BOOST_REQUIRE((a.what == kind::join));
  BOOST_TEST(f.join_ticket() == 7);
  a = f.resume(acquire_input::joined(ml::detail::success(true), t0, t0));
  BOOST_TEST((a.what == kind::wait_until));
  // In line now: reads only.
  BOOST_TEST((f.resume(acquire_input::read(seen(line_doc(other, {{me, 7}}, 8)), t0 + 20ms)).what == kind::wait_until));
  BOOST_TEST(f.joined());
}

BOOST_AUTO_TEST_CASE(a_free_lock_with_someone_else_first_in_line_is_left_to_them) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc("", {{other, 3}, {me, 4}}, 5)), t0));
  BOOST_TEST((a.what == kind::wait_until));
}

BOOST_AUTO_TEST_CASE(the_head_takes_and_leaves_the_line_in_the_same_update) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc("", {{me, 3}, {other, 4}}, 5)), t0));
  BOOST_REQUIRE((a.what == kind::take));
  const auto t = f.request();
  BOOST_TEST(t.leaving.size() == 1u);
  BOOST_TEST(t.leaving.front().owner == me);
  BOOST_TEST(!t.nobody_waiting);
  BOOST_TEST((f.resume(acquire_input::take(ml::detail::success(true), t0, t0 + 1ms)).what == kind::grant));
  BOOST_TEST(f.left_line_with_take());
}

BOOST_AUTO_TEST_CASE(with_nobody_in_line_a_take_requires_that_nobody_joined_meanwhile) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc("")), t0));
  BOOST_REQUIRE((a.what == kind::take));
  BOOST_TEST(f.request().nobody_waiting);
  BOOST_TEST(f.request().leaving.empty());
}

// The head must take a free lock within its own window (expiry + margin of unchanged document
// and head): the next in line then takes it and removes the head with the same update.
BOOST_AUTO_TEST_CASE(a_head_that_never_comes_loses_its_place_after_one_window) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  const auto d = line_doc("", {{other, 3}, {me, 4}}, 5);
  BOOST_TEST((f.resume(acquire_input::read(seen(d), t0)).what == kind::wait_until));
  BOOST_TEST((f.resume(acquire_input::read(seen(d), t0 + 1099ms)).what == kind::wait_until));
  auto a = f.resume(acquire_input::read(seen(d), t0 + 1100ms));
  BOOST_REQUIRE((a.what == kind::take));
  const auto t = f.request();
  BOOST_TEST(t.leaving.size() == 2u, "the gone head and ourselves");
  // A new head restarts the window.
  acquire_fsm g("x", params());
  g.resume(acquire_input::start(t0));
  g.resume(acquire_input::read(seen(d), t0));
  const auto later = line_doc("", {{"cccccccccccccccccccccccccccccccc", 2}, {me, 4}}, 5);
  BOOST_TEST((g.resume(acquire_input::read(seen(later), t0 + 1100ms)).what == kind::wait_until));
}

// A holder gone (its window passed) with another process first in line: the lock is the head's
// to take, and we watch the head for its own window, looking on our backoff meanwhile. Before,
// the holder's window, already past, cut every wait to zero: a read per round trip for as long as
// the head took (its whole window, E + m, when it was gone), and with a semaphore's poll group
// every permit was read at that rate.
BOOST_AUTO_TEST_CASE(a_lock_left_to_another_head_is_looked_at_on_the_backoff_not_at_once) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  const auto d = line_doc(other, {{"cccccccccccccccccccccccccccccccc", 3}, {me, 4}}, 5);
  BOOST_TEST((f.resume(acquire_input::read(seen(d), t0)).what == kind::wait_until));
  auto at = t0 + 1100ms;  // the holder's window (E + m) has passed: takeable, and the head's
  for (int i = 0; i < 5; ++i) {
    const auto a = f.resume(acquire_input::read(seen(d), at));
    BOOST_REQUIRE((a.what == kind::wait_until));
    BOOST_TEST((a.at >= at + 10ms), "look " << i << " waits at least backoff_min");
    BOOST_TEST((a.at <= at + 1100ms), "and no longer than the head's window");
    at = a.at;
  }
  // Just before the head's window ends, the next look is at its end, not a backoff later.
  const auto last = f.resume(acquire_input::read(seen(d), t0 + 2195ms));
  BOOST_REQUIRE((last.what == kind::wait_until));
  BOOST_TEST((last.at == t0 + 2200ms));
  // The head's window ends (the same head, the same document): we take, removing it.
  const auto a = f.resume(acquire_input::read(seen(d), last.at));
  BOOST_REQUIRE((a.what == kind::take));
  BOOST_TEST(f.request().leaving.size() == 2u, "the gone head and ourselves");
}

// The same for a free lock left to another process's head (a holder that released plainly while
// others waited): the backoff grows as it does for a held lock. Before, every free read reset it,
// so the others read every backoff_min for as long as the head took.
BOOST_AUTO_TEST_CASE(a_free_lock_left_to_another_head_is_looked_at_on_a_growing_backoff) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  const auto d = line_doc("", {{other, 3}, {me, 4}}, 5);
  auto at = t0;
  auto longest = 0ms;
  for (int i = 0; i < 6; ++i) {
    const auto a = f.resume(acquire_input::read(seen(d), at));
    BOOST_REQUIRE((a.what == kind::wait_until));
    longest = std::max(longest, std::chrono::duration_cast<std::chrono::milliseconds>(a.at - at));
    at = a.at;
  }
  BOOST_TEST(longest.count() > 10, "the longest wait, " << longest.count() << " ms, is above backoff_min");
}

// The take without a read (the blind take, docs/design.md section 1) must not overtake an acquire
// of another process that waits in line; after a read, a try ignores the line.
BOOST_AUTO_TEST_CASE(the_take_without_a_read_requires_that_nobody_waits) {
  acquire_fsm f("x", params());
  auto a = f.resume(acquire_input::start(t0));
  BOOST_REQUIRE((a.what == kind::take));
  BOOST_TEST(f.request().nobody_waiting);
  acquire_fsm t("x", params(true));
  BOOST_REQUIRE((t.resume(acquire_input::start(t0)).what == kind::take));
  BOOST_REQUIRE((t.resume(acquire_input::take(ml::detail::success(false), t0, t0)).what == kind::read));
  BOOST_REQUIRE((t.resume(acquire_input::read(ml::detail::success(line_doc("")), t0)).what == kind::take));
  BOOST_TEST(!t.request().nobody_waiting, "tries ignore the line");
}

// A `waiting` count with no entries a waiter can see (an edit by hand, entries mongolock did not
// write): a free lock is still taken, not retried at round-trip rate until the timeout.
BOOST_AUTO_TEST_CASE(a_waiting_count_without_visible_entries_does_not_block_a_free_lock) {
  engine e;
  auto odd = test::free_doc(7);
  odd.waiting = 3;
  e.store->put("odd", odd);
  auto [ec, l] = e.acquire("odd", 1s);
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(e.store->count(op::take) <= 3u);
}

// A ticket counter at the end of its range is not joined (ticket + 1 would overflow).
BOOST_AUTO_TEST_CASE(a_ticket_counter_at_its_limit_is_not_joined) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  BOOST_TEST((f.resume(acquire_input::read(seen(line_doc(other, {}, std::numeric_limits<std::int64_t>::max())), t0))
      .what == kind::wait_until));
  BOOST_TEST((f.resume(acquire_input::read(seen(line_doc(other, {}, -4)), t0)).what == kind::wait_until));
}

BOOST_AUTO_TEST_CASE(tries_ignore_the_line) {
  acquire_fsm f("x", params(true));
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc("", {{other, 3}}, 4)), t0));
  BOOST_REQUIRE((a.what == kind::take));
  BOOST_TEST(!f.request().nobody_waiting);
  BOOST_TEST(f.request().leaving.empty());
}

// First in line, the waiter looks again after half as long as the holder has held the lock so
// far: quickly while the hold is young, rarely once it is old (here backoff_min 10 ms, max 80 ms).
BOOST_AUTO_TEST_CASE(the_head_looks_again_after_half_the_hold_so_far) {
  acquire_fsm f("x", params());
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc(other, {{me, 1}}, 2)), t0));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_TEST(((a.at - t0) >= 10ms && (a.at - t0) <= 20ms), "a young hold: within 2 x backoff_min");
  // The same hold 100 ms later, renewed meanwhile (a new heartbeat is still the same hold).
  auto renewed = line_doc(other, {{me, 1}}, 2);
  renewed.held.beat = 2;
  a = f.resume(acquire_input::read(seen(renewed), t0 + 100ms));
  BOOST_TEST(((a.at - (t0 + 100ms)) >= 50ms && (a.at - (t0 + 100ms)) <= 80ms), "half the hold, capped at backoff_max");
  // A new holder: quick again.
  a = f.resume(acquire_input::read(seen(line_doc("cccccccccccccccccccccccccccccccc", {{me, 1}}, 2)), t0 + 200ms));
  BOOST_TEST(((a.at - (t0 + 200ms)) <= 20ms));
}

// Two providers (two processes, as far as the lock goes), two coroutines each, no think time:
// each re-asks the moment it releases. Before the line, the provider that released won again
// (its next waiter swaps against the document it just left): the other got nothing.
BOOST_AUTO_TEST_CASE(no_provider_starves_without_think_time) {
  engine e(fast(2000ms));
  std::vector<std::shared_ptr<ml::detail::provider_impl>> providers{
      e.p, std::make_shared<ml::detail::provider_impl>(e.io.get_executor(), e.store, fast(2000ms), nullptr)};
  std::map<int, int> won;
  const auto end = steady::now() + 1500ms;
  int running = 0;
  for (int p = 0; p < 2; ++p) {
    for (int w = 0; w < 2; ++w) {
      ++running;
      asio::co_spawn(e.io, [&, p]() -> asio::awaitable<void> {
        auto lock = ml::detail::access::make_lock(providers[p], "fair");
        asio::steady_timer hold(co_await asio::this_coro::executor);
        while (steady::now() < end) {
          auto [ec, l] = co_await lock.async_acquire_for(1000ms, asio::as_tuple(asio::use_awaitable));
          if (ec) continue;
          ++won[p];
          hold.expires_after(5ms);
          co_await hold.async_wait(asio::use_awaitable);
          co_await l.async_release(asio::as_tuple(asio::use_awaitable));
        }
        --running;
      }, asio::detached);
    }
  }
  while (running > 0 && steady::now() < end + 3s) e.run_one();
  BOOST_TEST(won[0] + won[1] >= 20);
  BOOST_TEST(std::min(won[0], won[1]) * 3 >= std::max(won[0], won[1]), won[0] << " vs " << won[1] << " acquisitions");
}

BOOST_AUTO_TEST_SUITE_END()
