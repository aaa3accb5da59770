// Backoff, expiry observation and lease deadlines: pure logic with an injected clock/RNG.
#include <boost/test/unit_test.hpp>
#include <random>

#include "sansio/backoff.hpp"
#include "sansio/expiry_observer.hpp"
#include "model/jitter_rng.hpp"
#include "model/lease_clock.hpp"

using namespace std::chrono_literals;
using mongolock::detail::backoff;
using mongolock::detail::expiry_observer;
using mongolock::detail::held_state;
using mongolock::detail::lease_clock;
using tp = mongolock::detail::boot_clock::time_point;

BOOST_AUTO_TEST_SUITE(backoff_suite)

BOOST_AUTO_TEST_CASE(stays_in_range_and_grows_to_cap) {
  std::mt19937_64 rng(42);
  backoff b(10ms, 800ms);
  std::chrono::milliseconds biggest{0};
  for (int i = 0; i < 200; ++i) {
    auto d = b.next(rng);
    BOOST_TEST(d.count() >= 10);
    BOOST_TEST(d.count() <= 800);
    biggest = std::max(biggest, d);
  }
  BOOST_TEST(b.ceiling().count() == 800);
  BOOST_TEST(biggest.count() > 400);  // jitter actually spreads up to the cap
}

BOOST_AUTO_TEST_CASE(first_delays_are_short_and_reset_restarts) {
  std::mt19937_64 rng(7);
  backoff b(10ms, 800ms);
  BOOST_TEST(b.next(rng).count() == 10);  // ceiling starts at min
  BOOST_TEST(b.next(rng).count() <= 20);
  for (int i = 0; i < 10; ++i) b.next(rng);
  b.reset();
  BOOST_TEST(b.ceiling().count() == 10);
}

BOOST_AUTO_TEST_CASE(jitter_differs_between_waiters) {
  std::mt19937_64 a(1), c(2);
  backoff x(10ms, 800ms), y(10ms, 800ms);
  int same = 0;
  for (int i = 0; i < 20; ++i) same += x.next(a) == y.next(c);
  BOOST_TEST(same < 10);
}

BOOST_AUTO_TEST_CASE(small_rng_spreads_delays_evenly) {
  mongolock::detail::jitter_rng rng(12345);
  backoff b(10ms, 800ms);
  for (int i = 0; i < 8; ++i) b.next(rng);  // ceiling now at the cap
  int low = 0, high = 0;
  for (int i = 0; i < 2000; ++i) (b.next(rng).count() < 405 ? low : high)++;
  BOOST_TEST(low > 850);  // about half on each side of the middle
  BOOST_TEST(high > 850);
  BOOST_TEST(sizeof(mongolock::detail::jitter_rng) == 8u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(expiry_observer_suite)

const held_state holder{"aa", 5, 3, 1000ms};

BOOST_AUTO_TEST_CASE(unchanged_heartbeat_expires_after_expiry_plus_margin) {
  expiry_observer o;
  const tp t0{};
  BOOST_TEST(o.observe(holder, t0, 100ms));
  BOOST_TEST(!o.expired(t0 + 1099ms));
  BOOST_TEST(!o.observe(holder, t0 + 1000ms, 100ms));  // same triple: window keeps its start
  BOOST_TEST(o.expired(t0 + 1100ms));
}

BOOST_AUTO_TEST_CASE(renewal_restarts_the_window) {
  expiry_observer o;
  const tp t0{};
  o.observe(holder, t0, 100ms);
  auto renewed = holder;
  renewed.beat++;
  BOOST_TEST(o.observe(renewed, t0 + 900ms, 100ms));
  BOOST_TEST(!o.expired(t0 + 1100ms));
  BOOST_TEST(o.expired(t0 + 2000ms));
}

BOOST_AUTO_TEST_CASE(new_owner_or_token_restarts_the_window) {
  expiry_observer o;
  const tp t0{};
  o.observe(holder, t0, 0ms);
  auto other = holder;
  other.owner = "bb";
  BOOST_TEST(o.observe(other, t0 + 999ms, 0ms));
  BOOST_TEST(!o.expired(t0 + 1500ms));
  auto retoken = other;
  retoken.token++;
  BOOST_TEST(o.observe(retoken, t0 + 1500ms, 0ms));
}

BOOST_AUTO_TEST_CASE(nothing_observed_never_expires) {
  expiry_observer o;
  BOOST_TEST(!o.expired(tp{} + 100h));
  BOOST_TEST(!o.expires_at().has_value());
  o.observe(holder, tp{}, 0ms);
  o.forget();
  BOOST_TEST(!o.expired(tp{} + 100h));
}

BOOST_AUTO_TEST_CASE(holder_stops_before_any_waiter_can_take_over) {
  // Holder sends its last renewal at s; the waiter reads (and sees it) no earlier than s.
  const tp s{std::chrono::seconds{10}};
  lease_clock holder_clock(s - 5s, 1000ms, 100ms);
  holder_clock.renewed(s);
  expiry_observer waiter;
  waiter.observe(holder, s, 100ms);  // earliest possible read that reflects the renewal
  const auto takeover = *waiter.expires_at();
  BOOST_TEST((holder_clock.deadline() < takeover));
  BOOST_TEST(((takeover - holder_clock.deadline()) == std::chrono::milliseconds(200)));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(lease_clock_suite)

BOOST_AUTO_TEST_CASE(deadline_counts_from_send_time) {
  const tp sent{std::chrono::seconds{1}};
  lease_clock c(sent, 30s, 3s);
  BOOST_TEST((c.deadline() == sent + 27s));
  BOOST_TEST(!c.lost_by(sent + 26s));
  BOOST_TEST(c.lost_by(sent + 27s));
}

BOOST_AUTO_TEST_CASE(late_reply_of_an_older_renewal_never_moves_deadline_back) {
  const tp t0{};
  lease_clock c(t0, 1000ms, 100ms);
  c.renewed(t0 + 600ms);
  c.renewed(t0 + 300ms);  // reply of an earlier request arriving late
  BOOST_TEST((c.deadline() == t0 + 1500ms));
}

BOOST_AUTO_TEST_SUITE_END()
