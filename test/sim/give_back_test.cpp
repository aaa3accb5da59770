// A take of unknown outcome that was not granted is given back on a ladder (docs/design.md
// section 4, "Give-back": at 0, 0.25, 1.25 and 5.25 s on a quick server), and a shutdown waits
// for every ladder, even past a shorter lease and one that starts after it (section 4,
// "Shutdown"). On virtual time, counted to the call.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "mongolock/lock.hpp"
#include "one_host.hpp"

namespace {

namespace ml = mongolock;
using namespace std::chrono_literals;
using boost::system::error_code;
using test::op;

// One host whose providers hold 3 s leases; theirs holds "x".
ml::lock_options short_leases() {
  ml::lock_options o;
  o.expiry = 3s;
  return o;
}
struct x_held_by_theirs : sim::one_host {
  x_held_by_theirs() : one_host(short_leases()) {
    auto [taken, l] = run<ml::lease>([&](auto k) { theirs.create_lock("x").async_acquire_for(1s, k); });
    BOOST_REQUIRE(!taken);
    held = std::move(l);
  }
  ml::lease held;
};

BOOST_AUTO_TEST_SUITE(give_back_suite)

// Theirs holds the lock; my acquire's blind take meets a stream error before it was sent (not
// applied, but ambiguous to me), so its token is unconfirmed; my provider shuts down while I wait.
BOOST_AUTO_TEST_CASE(a_shutdown_waits_for_the_give_back_ladder_past_a_short_expiry) {
  x_held_by_theirs h;
  h.store->inject(op::take, test::fault(test::fault::kind::stream_error_before));
  std::optional<error_code> waited;
  h.mine.create_lock("x").async_acquire([&](error_code ec, ml::lease) { waited = ec; });
  h.p.mail = true;
  h.w.run_until([] { return false; }, h.w.now() + 1s);
  BOOST_REQUIRE(!waited);
  const auto from = h.store->calls().size();
  const auto began = h.w.now();
  const auto ec = h.run([&](auto k) { h.mine.async_shutdown(k); });
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(waited.has_value());
  // Every attempt of the ladder went, the last 5.25 s after the first: past the 3 s lease.
  BOOST_TEST(h.since(from, op::release, "x").size() == 4u);
  BOOST_TEST((h.w.now() - began) >= sim::ns{5250ms});
}

// The ladder starts after the shutdown: my acquire timed out with its take in flight (abandoned),
// and the take's reply, a stream error 4 s after it was sent, comes 2.5 s into the shutdown.
BOOST_AUTO_TEST_CASE(a_shutdown_waits_for_a_ladder_that_starts_after_it) {
  x_held_by_theirs h;
  h.store->inject(op::take, test::fault(test::fault::kind::stream_error_before, 4000ms));
  const auto sent = h.w.now();
  auto [timed_out, none] = h.run<ml::lease>([&](auto k) { h.mine.create_lock("x").async_acquire_for(1s, k); });
  BOOST_TEST((timed_out == ml::errc::timeout), timed_out.message());
  h.w.run_until([] { return false; }, sent + 1500ms);
  const auto from = h.store->calls().size();
  const auto ec = h.run([&](auto k) { h.mine.async_shutdown(k); });
  BOOST_TEST(!ec, ec.message());
  // The give-back at the acquire's end, then the ladder from the late reply: at 4, 4.25, 5.25 and
  // 9.25 s after the take was sent.
  BOOST_TEST(h.since(from, op::release, "x").size() == 4u);
  BOOST_TEST((h.w.now() - sent) >= sim::ns{9250ms});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
