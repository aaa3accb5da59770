// The clock-rate rule on real processes (docs/design.md section 6): a holder whose clock runs slow
// (0.8x, libfaketime) and a waiter whose clock runs fast (1.25x). The holder takes the lock through
// the fault proxy and works; the waiter polls the server directly, seeing each renewal; then the
// proxy swallows the holder's traffic, so its renewals stop while it keeps working until its own
// deadline, E - m of its clock after its last renewal. The waiter takes over E + m of its clock
// after it last saw the heartbeat move, and reports OVERLAP if the holder's marker is still there.
// The rule (README, docs/design.md): safe while rw / rh < (E + m) / (E - m). Here rw / rh is
// 1.5625: the default margin (10 %: 1.22) overlaps, a 30 % margin (1.86) does not. 25 % (1.67)
// would too, by the rule, but leaves a loaded machine only 250 ms for the holder to stop (30 %: 660
// ms); the exact edge is tested on the state machines (unit/clock_rate_test.cpp).
#include <optional>

#include "fault_proxy.hpp"
#include "processes.hpp"
#include "proxy_target.hpp"

using namespace test;

namespace {

constexpr auto expiry = 4000ms;

// One trial; true if the waiter found the holder still inside. nullopt: no verdict, because the
// waiter printed nothing at all within 4 x expiry (seen twice on a loaded 2-core machine, always
// in a case's second trial; the cause is not known yet): the caller runs another trial.
std::optional<bool> waiter_overlapped(std::chrono::milliseconds margin) {
  const auto up = single_host(server_uri());
  BOOST_REQUIRE(up);
  fault_proxy proxy(up->host, up->port);
  const auto dir = scratch("rates");
  const auto name = unique("rates");
  const std::vector<std::string> timing{"--expiry-ms", std::to_string(expiry.count()), "--margin-ms",
                                        std::to_string(margin.count())};
  auto holder_args = worker_args(name, dir, {"--forever"});
  holder_args.insert(holder_args.end(), timing.begin(), timing.end());
  holder_args[2] = "mongodb://127.0.0.1:" + std::to_string(proxy.port()) + "/?directConnection=true";
  child holder(holder_args, dir / "holder", "+0 x0.8");
  BOOST_REQUIRE_MESSAGE(holder.wait_for_text("acquired", 10s), slurp(dir / "holder"));
  auto waiter_args = worker_args(name, dir, {"--count", "1", "--hold-ms", "300", "--backoff-max-ms", "20"});
  waiter_args.insert(waiter_args.end(), timing.begin(), timing.end());
  child waiter(waiter_args, dir / "waiter", "+0 x1.25");
  std::this_thread::sleep_for(expiry / 2);  // the waiter watches two renewals arrive
  proxy.blackhole();
  if (!waiter.wait_for_text("released", 4 * expiry)) {
    const auto said = slurp(dir / "waiter");
    BOOST_REQUIRE_MESSAGE(said.empty(), said);  // it spoke but never released: a failure
    BOOST_TEST_MESSAGE("no verdict: the waiter printed nothing in " << (4 * expiry).count() << " ms; holder:\n"
                                                                    << slurp(dir / "holder"));
    proxy.pass();
    return std::nullopt;
  }
  BOOST_TEST(holder.wait_for_text("LOST", expiry), slurp(dir / "holder"));
  BOOST_TEST_MESSAGE("margin " << margin.count() << " ms: holder\n" << slurp(dir / "holder") << "waiter\n"
                               << slurp(dir / "waiter"));
  proxy.pass();
  return slurp(dir / "waiter").find("OVERLAP") != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(clock_rates, *boost::unit_test::precondition(proxyable()))

BOOST_AUTO_TEST_CASE(a_margin_chosen_by_the_rule_keeps_holder_and_waiter_apart) {
  if (skip_without_faketime()) return;
  int verdicts = 0;
  for (int trial = 0; trial < 4 && verdicts < 2; ++trial) {
    const auto overlapped = waiter_overlapped(expiry * 3 / 10);
    if (!overlapped) continue;
    ++verdicts;
    BOOST_TEST(!*overlapped, "trial " << trial);
  }
  BOOST_TEST(verdicts == 2, "two trials with a verdict");
}

// The rule is tight, not decorative: with the default margin the same two clocks overlap (the
// black-box run found it in 12 trials of 12). The window is about 1 s of the 4 s lease.
BOOST_AUTO_TEST_CASE(beyond_the_rule_the_same_clocks_overlap) {
  if (skip_without_faketime()) return;
  bool seen = false;
  for (int trial = 0; trial < 3 && !seen; ++trial) seen = waiter_overlapped(expiry / 10).value_or(false);
  BOOST_TEST(seen, "no overlap at the default margin: the rule's premise does not hold here");
}

BOOST_AUTO_TEST_SUITE_END()
