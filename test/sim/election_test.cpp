// An election on virtual time: a campaign hands out no leadership whose lease is past its
// deadline, and an observer honours cancellation while its poll's read is in flight
// (election.hpp).
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <optional>

#include "mongolock/election.hpp"
#include "one_host.hpp"

namespace {

namespace ml = mongolock;
using namespace std::chrono_literals;
using boost::system::error_code;
using test::op;

BOOST_AUTO_TEST_SUITE(campaign_and_observer_suite)

BOOST_AUTO_TEST_CASE(an_observer_cancelled_during_its_read_ends_its_wait) {
  sim::one_host h{ml::lock_options{}};
  auto leaders = h.mine.create_election("e").observe();
  auto [first, none] = h.run<ml::leader_info>([&](auto k) { leaders.async_next(k); });
  BOOST_REQUIRE(!first);
  // The next wait: its first poll (3 s on, a tenth of the expiry) reads for 5 s.
  h.store->inject(op::read, test::fault(test::fault::kind::hang, 5000ms));
  boost::asio::cancellation_signal cancel;
  std::optional<error_code> got;
  leaders.async_next(
      boost::asio::bind_cancellation_slot(cancel.slot(), [&](error_code e, ml::leader_info) { got = e; }));
  h.p.mail = true;
  h.w.run_until([] { return false; }, h.w.now() + 4s);
  BOOST_REQUIRE(!got);
  const auto cancelled = h.w.now();
  cancel.emit(boost::asio::cancellation_type::terminal);
  h.p.mail = true;
  h.w.run_until([&] { return got.has_value(); }, h.w.now() + 60s);
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST((*got == boost::asio::error::operation_aborted), got->message());
  BOOST_TEST((h.w.now() - cancelled) <= sim::ns{4s}, "once the read returned, at 8 s");
}

// The proclaim's reply comes while the process is frozen (a SIGSTOP) past the lease's deadline:
// on waking, the reply may run before the watchdog; the campaign still fails.
BOOST_AUTO_TEST_CASE(a_campaign_whose_lease_ran_out_during_its_proclaim_fails) {
  ml::lock_options o;
  o.expiry = 3s;
  sim::one_host h{o};
  h.store->inject(op::proclaim, test::fault(test::fault::kind::hang, 2000ms));
  std::optional<error_code> got;
  h.mine.create_election("e").candidate("me").async_acquire([&](error_code e, ml::leadership) { got = e; });
  h.p.mail = true;
  h.w.run_until([] { return false; }, h.w.now() + 500ms);
  BOOST_REQUIRE(!got);
  h.p.pause(h.w.now(), 10s);
  h.w.run_until([&] { return got.has_value(); }, h.w.now() + 60s);
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST((*got == ml::errc::lease_lost), got->message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
