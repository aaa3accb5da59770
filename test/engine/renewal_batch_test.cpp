// Batched renewal (docs/design.md section 5): every lease a provider holds is renewed by one store
// command per tick, and a batch whose matched count comes up short loses exactly the leases whose
// documents moved on. On the in-memory store, where the commands are counted.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cstdint>
#include <future>
#include <vector>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

// Leases acquired one after the other, each on its own name.
std::vector<ml::lease> hold(engine& e, const std::string& prefix, int n) {
  std::vector<ml::lease> out;
  for (int i = 0; i < n; ++i) {
    auto [ec, l] = e.acquire(prefix + std::to_string(i), 1s);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    out.push_back(std::move(l));
  }
  return out;
}

// Runs until a renewal command renews `want` leases or `limit` passes; the largest batch seen.
std::int64_t largest_renewal_within(engine& e, std::chrono::milliseconds limit, std::int64_t want) {
  const auto from = e.store->calls().size();
  const auto end = steady::now() + limit;
  std::int64_t largest = 0;
  while (largest < want && steady::now() < end) {
    e.run_for(20ms);
    for (auto& c : calls_since(e, from, op::renew)) largest = std::max(largest, c.token);  // token: leases renewed
  }
  return largest;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(renewal_batch_suite)

// 12 leases, renewal every 200 ms: one command per tick renews them all (one command per lease
// would be 12 a tick). The 12 acquires are sequential and, on a loaded machine under a sanitizer,
// can spread over more than half a period and start two trains: their merge into one command
// (docs/design.md section 5) is observed first, then the next five commands each renew all 12.
BOOST_AUTO_TEST_CASE(one_command_per_tick_renews_every_lease) {
  engine e(fast(600ms));  // renew every 200 ms, margin 60 ms
  auto leases = hold(e, "batch", 12);
  std::vector<std::int64_t> taken_beats;  // each renewal writes a beat of its own
  for (int i = 0; i < 12; ++i) taken_beats.push_back(e.store->get("batch" + std::to_string(i)).held.beat);
  BOOST_REQUIRE_MESSAGE(largest_renewal_within(e, 3000ms, 12) == 12, "one command renews all 12 leases within 15 periods");
  const auto from = e.store->calls().size();
  const auto before = e.store->count(op::renew);
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::renew) >= before + 5; }, 3000ms));
  const auto renewals = calls_since(e, from, op::renew);
  BOOST_REQUIRE(renewals.size() >= 5u);
  for (std::size_t i = 0; i < renewals.size(); ++i)
    BOOST_TEST(renewals[i].token == 12, "renewal command " << i << " renewed " << renewals[i].token << " leases");
  // One command per tick, not more: a lease's next renewal is due a whole period (200 ms) after
  // its answer, so five commands of one train span at least four periods (20 ms for the clocks).
  const auto spread = std::chrono::duration_cast<std::chrono::milliseconds>(renewals[4].at - renewals[0].at);
  BOOST_TEST((spread >= 780ms), spread.count() << " ms for 5 renewal commands");
  for (int i = 0; i < 12; ++i) {
    BOOST_TEST(leases[i].held());
    BOOST_TEST(e.store->get("batch" + std::to_string(i)).held.beat != taken_beats[i], "lease " << i << " was renewed");
  }
}

// Leases acquired at different phases of the tick end up in the same batch (a lease may renew
// up to half a period early to join one), instead of one train of commands per phase. The merge is
// observed (a command that renews all six) rather than assumed after a fixed time: on a loaded
// machine under a sanitizer, late answers shift the trains and the merge can take a few periods.
BOOST_AUTO_TEST_CASE(leases_taken_at_different_times_join_one_train) {
  engine e(fast(600ms));
  auto leases = hold(e, "early", 3);
  e.run_for(90ms);
  auto more = hold(e, "late", 3);
  BOOST_TEST(largest_renewal_within(e, 3000ms, 6) == 6, "one command renews all six leases within 15 periods");
  const auto before = e.store->count(op::renew);
  e.run_for(1000ms);
  const auto commands = e.store->count(op::renew) - before;
  BOOST_TEST(commands <= 7u, commands << " renewal commands over 5 ticks once merged");
  for (auto* v : {&leases, &more})
    for (auto& l : *v) BOOST_TEST(l.held());
}

// Someone else's document under one of five leases: that lease, and only that one, is lost; the
// other four keep renewing in the same batches.
BOOST_AUTO_TEST_CASE(a_short_batch_loses_exactly_the_lease_that_moved_on) {
  engine e(fast(600ms));
  auto leases = hold(e, "five", 5);
  e.run_for(100ms);
  auto stolen = e.store->get("five2");
  stolen.held.owner = "0123456789abcdef0123456789abcdef";
  stolen.held.token += 1;
  e.store->put("five2", stolen);
  auto lost = engine::ec_future([&](auto h) { leases[2].async_wait_lost(h); });
  BOOST_REQUIRE(e.wait(lost, 1s));
  BOOST_TEST((lost.get() == ml::errc::lease_lost));
  const auto beats = e.store->get("five0").held.beat;
  e.run_for(700ms);
  for (int i : {0, 1, 3, 4}) BOOST_TEST(leases[i].held(), "lease " << i << " is still held");
  BOOST_TEST(e.store->get("five0").held.beat >= beats + 2);
  BOOST_TEST(e.store->get("five2").held.owner == stolen.held.owner, "the new owner's lock is left alone");
}

// A failed batch fails every lease in it: each retries sooner, none is credited, none is lost
// while its deadline is ahead.
BOOST_AUTO_TEST_CASE(a_failed_batch_is_retried_and_loses_nothing) {
  engine e(fast(600ms));
  auto leases = hold(e, "retry", 4);
  e.store->inject(op::renew, {fault::kind::stream_error_before});
  e.run_for(900ms);
  for (auto& l : leases) BOOST_TEST(l.held());
}

// A released lease leaves the batch: its name gets no renewal after the release.
BOOST_AUTO_TEST_CASE(a_released_lease_leaves_the_batch) {
  engine e(fast(600ms));
  auto leases = hold(e, "leave", 3);
  BOOST_TEST(!e.release(leases[1]));
  const auto beat = e.store->get("leave1").held.beat;
  e.run_for(700ms);
  BOOST_TEST(e.store->get("leave1").held.beat == beat);
  BOOST_TEST(e.store->get("leave0").held.beat >= 2);
  for (auto& c : e.store->calls())
    if (c.what == op::renew) BOOST_TEST(c.name.find("leave1") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
