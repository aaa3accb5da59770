// The simulation's runs (docs/design.md section 11, "Simulation"): a seed replays the same run, and
// a handful of seeds pass every oracle (the corpus runs in CI through mongolock-sim).
#include <boost/test/unit_test.hpp>

#include "scenario.hpp"

namespace {

BOOST_AUTO_TEST_SUITE(simulation_suite)

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_trace) {
  for (const std::uint64_t seed : {1u, 7u, 42u}) {
    const auto a = sim::run_seed(seed), b = sim::run_seed(seed);
    BOOST_TEST(a.trace_hash == b.trace_hash, "seed " << seed);
    BOOST_TEST(a.events == b.events, "seed " << seed);
    BOOST_TEST(a.events > 20u, "seed " << seed << " did too little to show anything");
  }
  BOOST_TEST(sim::run_seed(1).trace_hash != sim::run_seed(2).trace_hash);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
