// Every command within the server's limits (docs/design.md section 14, "Every command within the
// server's limits"), through the engine on the in-memory store with its maxBsonObjectSize lowered
// to 64 KiB, which a few hundred long names already pass: the store refuses a command over it, as
// libmongoc does. The lists that grow with the caller: a release of every lease, a poll of many
// names.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

constexpr std::size_t lowered_limit = 64 * 1024;

// Name i of `prefix`, padded to 300 bytes.
std::string padded_name(const std::string& prefix, int i) {
  auto n = prefix + std::to_string(i) + "-";
  n.resize(300, 'x');
  return n;
}

// The commands of `what` since call number `from` (their number in `parts`), and the sum of what
// each counted (a release_owners' record: its owner ids; a read_each's: its names).
std::int64_t parts_sum(engine& e, std::size_t from, op what, std::size_t* parts) {
  const auto calls = calls_since(e, from, what);
  *parts = calls.size();
  std::int64_t sum = 0;
  for (const auto& c : calls) sum += c.token;
  return sum;
}

// 300 leases of `e`'s provider, on names of `prefix` padded to 300 bytes.
struct held_leases {
  std::vector<std::string> names;
  std::vector<ml::lease> leases;
  held_leases(engine& e, const std::string& prefix) {
    for (int i = 0; i < 300; ++i) {
      names.push_back(padded_name(prefix, i));
      auto [ec, l] = e.acquire(names.back(), 1s);
      BOOST_REQUIRE_MESSAGE(!ec, ec.message());
      leases.push_back(std::move(l));
    }
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(command_limits_suite)

// 300 leases of 300-byte names: their release as one statement weighs about 107 KB.
BOOST_AUTO_TEST_CASE(releasing_every_lease_past_the_size_limit_frees_every_document) {
  engine e(fast(20s));  // no renewal while the test runs
  e.store->set_max_bson(lowered_limit);
  const held_leases h(e, "all");
  const auto& names = h.names;
  const auto from = e.store->calls().size();
  auto provider = ml::detail::access::make_provider(e.p);
  auto [ec, freed] = run_op<std::tuple<error_code, std::size_t>>(e, [&](auto h) { provider.async_release_all(h); });
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(freed == 300u);
  for (const auto& n : names) BOOST_TEST(e.store->get(n).held.owner.empty(), "still held: " << n.substr(0, 8));
  std::size_t parts = 0;
  BOOST_TEST(parts_sum(e, from, op::release_owners, &parts) == 300);  // each lease in exactly one part
  BOOST_TEST(parts >= 2u);
}

// A semaphore wait on 64 permits of a 300-byte name, every one held by another process: its looks
// at the permits are finds of 64 names, about 20 KB, over a 16 KiB limit. In parts (of 8 KiB, the
// budget that limit leaves), the wait hears a permit freed and is granted.
BOOST_AUTO_TEST_CASE(a_wait_whose_looks_are_past_the_size_limit_is_granted_when_a_permit_is_freed) {
  engine e(fast(20s));
  e.store->set_max_bson(lowered_limit / 4);
  const auto name = padded_name("sem", 0);
  auto them = other_provider(e, fast(20s));
  auto theirs = ml::detail::access::make_provider(them).create_semaphore(name, 64);
  std::vector<ml::lease> held;
  for (int i = 0; i < 64; ++i) {
    auto [ec, l] = run_op<std::tuple<error_code, ml::lease>>(e, [&](auto h) { theirs.async_try_acquire(h); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    held.push_back(std::move(l));
  }
  const auto from = e.store->calls().size();
  auto ours = std::make_shared<waiter>();
  ml::detail::access::make_provider(e.p).create_semaphore(name, 64).async_acquire_for(
      10s, [ours](error_code ec, ml::lease l) {
        ours->ec = ec;
        ours->held = std::move(l);
        ours->done = true;
      });
  e.run_for(300ms);  // it has looked at every permit, found them held, and waits
  BOOST_REQUIRE(!ours->done);
  BOOST_REQUIRE(!e.release(held.back()));
  BOOST_REQUIRE(run_until(e, [&] { return ours->done; }, 5s));
  BOOST_TEST(!ours->ec, ours->ec.message());
  // Its finds went in parts: more than one name each, fewer than 64.
  std::int64_t most = 0;
  for (const auto& c : calls_since(e, from, op::read_each)) most = std::max(most, c.token);
  BOOST_TEST(most > 1);
  BOOST_TEST(most < 64);
  // Everything given back and answered before the engine goes: a store call still in flight then
  // is destroyed unanswered with the io_context, and its caller's frame leaks with it (its
  // call_state and cancellation handler hold each other until the reply comes: async_call.hpp).
  BOOST_REQUIRE(!e.release(ours->held));
  auto [ec, freed] = run_op<std::tuple<error_code, std::size_t>>(
      e, [&](auto h) { ml::detail::access::make_provider(them).async_release_all(h); });
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(freed == 63u);
  e.run_for(300ms);
}

// The second part of three refused: the call fails with its error, and counts and frees the
// first's and the third's leases; the second's stay held (they expire, as after any failed release).
BOOST_AUTO_TEST_CASE(a_failed_part_of_a_release_fails_only_its_own_leases) {
  engine e(fast(20s));
  e.store->set_max_bson(lowered_limit);
  const held_leases h(e, "part");
  const auto& names = h.names;
  e.store->inject(op::release_owners, fault(fault::kind::pass));
  e.store->inject(op::release_owners, fault(fault::kind::refused));
  const auto from = e.store->calls().size();
  auto provider = ml::detail::access::make_provider(e.p);
  auto [ec, freed] = run_op<std::tuple<error_code, std::size_t>>(e, [&](auto h) { provider.async_release_all(h); });
  BOOST_TEST((ec == ml::errc::server_error), ec.message());
  const auto parts = calls_since(e, from, op::release_owners);
  BOOST_REQUIRE(parts.size() == 3u);
  const auto second = static_cast<std::size_t>(parts[1].token);
  BOOST_TEST(freed == 300u - second);
  // Held: exactly the names of the refused part (its record joins them with ',').
  std::set<std::string> refused;
  std::stringstream joined(parts[1].name);
  for (std::string n; std::getline(joined, n, ',');) refused.insert(n);
  BOOST_TEST(refused.size() == second);
  for (const auto& n : names)
    BOOST_TEST(e.store->get(n).held.owner.empty() != refused.contains(n), n.substr(0, 8));
}

BOOST_AUTO_TEST_SUITE_END()
