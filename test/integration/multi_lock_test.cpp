// multi_lock with real processes, real signals and skewed clocks (docs/design.md section 8). Each
// worker holds several names at once; every name has its own marker (overlap), journal (token
// order) and fencing-checked resource.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "fixture.hpp"
#include "processes.hpp"

using namespace test;
using boost::system::error_code;
namespace ml = mongolock;
namespace fs = std::filesystem;

namespace {

// A worker on `names` (comma-separated) instead of one name.
std::vector<std::string> multi_args(const std::string& names, const fs::path& dir, std::vector<std::string> extra) {
  return worker_args(names, dir, std::move(extra), "--names");
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_lock)

// Three processes over a cycle of names ({a,b}, {b,c}, {c,a}): taken in the order given, any
// two could each hold one name and wait for the other's. In one canonical order, all finish.
BOOST_AUTO_TEST_CASE(a_cycle_of_overlapping_sets_neither_deadlocks_nor_overlaps) {
  const auto dir = scratch("multi-cycle");
  const auto base = unique("cyc");
  const std::string a = base + "-a", b = base + "-b", c = base + "-c";
  const std::vector<std::string> sets{b + "," + a, c + "," + b, a + "," + c};
  std::vector<std::unique_ptr<child>> kids;
  for (std::size_t i = 0; i < sets.size(); ++i)
    kids.push_back(std::make_unique<child>(multi_args(sets[i], dir, {"--count", "4", "--hold-ms", "20"}),
                                           dir / ("out" + std::to_string(i))));
  const auto t0 = clock::now();
  for (auto& k : kids) BOOST_TEST(k->wait_exit() == 0);
  BOOST_TEST_MESSAGE("12 multi-lock rounds over a cycle of 3 names in " << ms_since(t0) << " ms");
  std::string all;
  for (std::size_t i = 0; i < sets.size(); ++i) all += slurp(dir / ("out" + std::to_string(i)));
  BOOST_TEST(all.find("OVERLAP") == std::string::npos, all);
  BOOST_TEST(all.find("REJECTED") == std::string::npos, all);
  for (const auto& n : {a, b, c}) {
    const auto tokens = journal_tokens(dir / ("journal-" + n));
    BOOST_TEST(tokens.size() == 8u, n);  // two sets of four rounds each hold every name
    for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST(tokens[i] > tokens[i - 1], n);
  }
}

BOOST_FIXTURE_TEST_CASE(a_killed_holder_of_a_set_is_taken_over_after_expiry, io_fixture) {
  const auto dir = scratch("multi-kill");
  const auto base = unique("mkill");
  const std::vector<std::string> names{base + "-x", base + "-y", base + "-z"};
  child holder(multi_args(names[0] + "," + names[1] + "," + names[2], dir, {"--forever", "--expiry-ms", "1000"}),
               dir / "out");
  BOOST_REQUIRE_MESSAGE(holder.wait_for_text("acquired", 10s), slurp(dir / "out"));
  ::kill(holder.pid, SIGKILL);
  const auto killed = clock::now();
  BOOST_TEST(holder.wait_exit() == 128 + SIGKILL);
  auto p = make_provider();
  long long waited = 0;
  std::map<std::string, std::int64_t> tokens;
  // Built outside the coroutine: GCC 12 cannot put an initializer list's array in its frame.
  auto shuffled = p.create_multi_lock({names[2], names[0], names[1]});
  run([&]() -> asio::awaitable<void> {
    auto set = co_await shuffled.async_acquire_for(10000ms);
    waited = ms_since(killed);
    for (const auto& n : names) tokens[n] = set.fencing_token(n);
    co_await set.async_release();
  }());
  BOOST_TEST_MESSAGE("set taken over " << waited << " ms after SIGKILL");
  BOOST_TEST(waited >= 1000);  // never before the dead holder's expiry
  BOOST_TEST(waited < 3 * 1100 + 2000);  // the names are observed one after another (README)
  for (const auto& n : names) BOOST_TEST(tokens[n] > read_token(dir / ("resource-" + n)), n);
}

// A holder of a set paused past its lease: on resume its guard is cancelled (every name's work),
// and the new holder's tokens fence its late writes off.
BOOST_FIXTURE_TEST_CASE(a_stopped_holder_of_a_set_is_cancelled_on_resume_and_fenced_out, io_fixture) {
  const auto dir = scratch("multi-stop");
  const auto base = unique("mstop");
  const std::vector<std::string> names{base + "-p", base + "-q"};
  auto p = make_provider();
  std::map<std::string, std::int64_t> mine;
  auto both = p.create_multi_lock(names);
  a_stopped_holder_resumes_to_a_lost_lease(
      *this, dir, multi_args(names[0] + "," + names[1], dir, {"--forever", "--expiry-ms", "1000"}),
      [&](auto t) { return both.async_acquire_for(t, asio::use_awaitable); },
      [&](const ml::multi_lease& set) {
        for (const auto& n : names) mine[n] = set.fencing_token(n);
        for (const auto& [n, token] : mine) write_resource(dir / ("resource-" + n), token);
      });
  for (const auto& n : names) BOOST_TEST(read_token(dir / ("resource-" + n)) == mine[n], n);
}

// A holder of a set whose clock runs 5 hours ahead keeps every lock; a waiter 3 hours behind
// waits for the set and gets it once released.
BOOST_FIXTURE_TEST_CASE(clocks_off_by_hours_change_nothing_for_a_set, io_fixture) {
  if (skip_without_faketime()) return;
  const auto dir = scratch("multi-skew");
  const auto base = unique("mskew");
  const std::vector<std::string> names{base + "-1", base + "-2"};
  const auto list = names[0] + "," + names[1];
  auto p = make_provider();
  auto both = p.create_multi_lock(names);
  clocks_off_by_hours_change_nothing(
      *this, dir, multi_args(list, dir, {"--forever", "--expiry-ms", "1000"}),
      multi_args(list, dir, {"--count", "1", "--hold-ms", "10", "--expiry-ms", "1000"}),
      [&](auto t) { return both.async_acquire_for(t, asio::as_tuple(asio::use_awaitable)); },
      [&](auto t) { return both.async_acquire_for(t, asio::use_awaitable); });
}

// Against the real driver and server: bad input is refused with its reason, and nothing is taken.
BOOST_FIXTURE_TEST_CASE(bad_sets_are_refused_with_a_reason, io_fixture) {
  auto p = make_provider();
  const auto name = unique("mbad");
  auto twice = p.create_multi_lock({name, name});  // outside the coroutine, as above
  auto none = p.create_multi_lock({});
  run([&]() -> asio::awaitable<void> {
    ml::diagnostics d;
    auto [ec, set] = co_await twice.async_acquire_for(1000ms, d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::invalid_options), ec.message());
    BOOST_TEST(d.reason.find("given twice") != std::string::npos, d.reason);
    auto [ec2, set2] = co_await none.async_acquire(d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec2 == ml::errc::invalid_options), ec2.message());
    auto info = co_await p.async_inspect(name);
    BOOST_TEST(!info.exists, "nothing was written");
  }());
}

BOOST_AUTO_TEST_SUITE_END()
