// A take of unknown outcome that was not granted is given back on a ladder (docs/design.md
// section 4, "Give-back": attempts at 0, 0.25, 1.25 and 5.25 s), and a shutdown waits for the
// ladder even when the lease is shorter (section 4, "Shutdown"): on virtual time, to the call.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "mongolock/lock.hpp"
#include "one_host.hpp"

namespace {

namespace ml = mongolock;
using namespace std::chrono_literals;
using boost::system::error_code;
using test::op;

BOOST_AUTO_TEST_SUITE(give_back_suite)

// Theirs holds the lock; my acquire's blind take meets a stream error before it was sent (not
// applied, but ambiguous to me), so its token is unconfirmed; my provider shuts down while I wait.
BOOST_AUTO_TEST_CASE(a_shutdown_waits_for_the_give_back_ladder_past_a_short_expiry) {
  ml::lock_options o;
  o.expiry = 3s;
  sim::one_host h{o};
  auto [taken, held] = h.run<ml::lease>([&](auto k) { h.theirs.create_lock("x").async_acquire_for(1s, k); });
  BOOST_REQUIRE(!taken);
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

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
