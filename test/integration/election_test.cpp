// Leader election with real processes, real signals and skewed clocks (docs/design.md section 9):
// the mongolock-leader example as candidates and observer, the library in this process.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "fixture.hpp"
#include "processes.hpp"

using namespace test;
using boost::system::error_code;
namespace ml = mongolock;
namespace fs = std::filesystem;

namespace {

std::string leader_path() { return program_path("MONGOLOCK_LEADER"); }

std::vector<std::string> leader_args(const std::string& name, const fs::path& dir, std::vector<std::string> extra) {
  std::vector<std::string> a{leader_path(), "--uri", server_uri(), "--db", "mongolock_test", "--name", name,
                             "--dir", dir.string(), "--expiry-ms", "1000"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// The first candidate not in `except` to print LEADER within `limit`, or -1.
int wait_for_leader(const std::vector<std::unique_ptr<child>>& kids, std::vector<int> except, std::chrono::milliseconds limit) {
  const auto t0 = clock::now();
  while (clock::now() - t0 < limit) {
    for (std::size_t i = 0; i < kids.size(); ++i) {
      if (std::find(except.begin(), except.end(), static_cast<int>(i)) != except.end()) continue;
      if (slurp(kids[i]->out).find("LEADER") != std::string::npos) return static_cast<int>(i);
    }
    std::this_thread::sleep_for(10ms);
  }
  return -1;
}

// "leader term=T value=V" lines of an observer, as terms.
std::vector<std::int64_t> observed_terms(const fs::path& out) {
  std::vector<std::int64_t> terms;
  std::istringstream lines(slurp(out));
  std::string line;
  while (std::getline(lines, line)) {
    const auto at = line.find("leader term=");
    if (at != std::string::npos) terms.push_back(std::atoll(line.c_str() + at + 12));
  }
  return terms;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(election)

// Three candidates; the leader is killed twice. Each time another wins, and the observer sees the
// terms rise. The candidates were watching before the kill, so they count the dead leader's
// silence from its last renewal (up to renew_every = 333 ms before the kill): the new leader
// comes expiry + margin after that renewal, so 767..1,100 ms after the kill (plus polling).
BOOST_AUTO_TEST_CASE(killed_leaders_are_succeeded_in_rising_terms) {
  const auto dir = scratch("elect-kill");
  const auto name = unique("elect");
  child watcher(leader_args(name, dir, {"--observe"}), dir / "observer");
  std::vector<std::unique_ptr<child>> kids;
  for (int i = 0; i < 3; ++i)
    kids.push_back(std::make_unique<child>(leader_args(name, dir, {"--value", "10.0.0." + std::to_string(i) + ":80"}),
                                           dir / ("candidate" + std::to_string(i))));
  std::vector<int> dead;
  int leader = wait_for_leader(kids, dead, 10s);
  BOOST_REQUIRE(leader >= 0);
  for (int round = 0; round < 2; ++round) {
    std::this_thread::sleep_for(300ms);  // it leads a while (and writes its term)
    ::kill(kids[leader]->pid, SIGKILL);
    const auto killed = clock::now();
    BOOST_TEST(kids[leader]->wait_exit() == 128 + SIGKILL);
    dead.push_back(leader);
    leader = wait_for_leader(kids, dead, 10s);
    const auto failover = ms_since(killed);
    BOOST_TEST_MESSAGE("round " << round << ": new leader " << failover << " ms after SIGKILL");
    BOOST_REQUIRE(leader >= 0);
    BOOST_TEST(failover >= 1000 + 100 - 334, "never before expiry + margin after its last renewal");
    BOOST_TEST(failover < 1100 + 2000);
  }
  std::this_thread::sleep_for(500ms);  // the observer polls every 100 ms
  const auto terms = observed_terms(dir / "observer");
  BOOST_TEST(terms.size() == 3u, slurp(dir / "observer"));
  for (std::size_t i = 1; i < terms.size(); ++i) BOOST_TEST(terms[i] > terms[i - 1]);
  std::string all;
  for (auto& k : kids) all += slurp(k->out);
  BOOST_TEST(all.find("REJECTED") == std::string::npos, all);
  if (!terms.empty()) BOOST_TEST(read_token(dir / "resource") == terms.back(), "the last leader's term is the last written");
}

// A leader paused past its lease: another candidate wins meanwhile; on resume the old leader
// learns it lost (its work is cancelled, exit 3) and its term is fenced off.
BOOST_FIXTURE_TEST_CASE(a_stopped_leader_learns_it_lost_and_is_fenced_off, io_fixture) {
  const auto dir = scratch("elect-stop");
  const auto name = unique("estop");
  child old(leader_args(name, dir, {"--value", "old:1"}), dir / "old");
  BOOST_REQUIRE_MESSAGE(old.wait_for_text("LEADER", 10s), slurp(dir / "old"));
  ::kill(old.pid, SIGSTOP);
  auto p = make_provider(fast_options(), "elections");  // the collection mongolock-leader uses
  auto el = p.create_election(name);
  std::int64_t mine = 0;
  run([&]() -> asio::awaitable<void> {
    auto me = el.candidate("new:2");  // named: GCC 12 and temporaries in co_await
    auto lead = co_await me.async_acquire_for(10000ms);
    mine = lead.term();
    write_resource(dir / "resource", mine);
    ::kill(old.pid, SIGCONT);
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer t(ex, 1500ms);
    co_await t.async_wait(asio::deferred);
    BOOST_TEST(lead.held());
    co_await lead.async_resign();
  }());
  BOOST_TEST(old.wait_for_text("LOST", 5s), slurp(dir / "old"));
  BOOST_TEST(old.wait_exit() == 3);
  BOOST_TEST(read_token(dir / "resource") == mine, "the stale leader never overwrote the new term");
}

// A leader whose clock runs 5 hours ahead keeps leading: a campaign with a 2.5 s timeout loses.
BOOST_FIXTURE_TEST_CASE(a_leader_with_a_skewed_clock_keeps_leading, io_fixture) {
  if (skip_without_faketime()) return;
  const auto dir = scratch("elect-skew");
  const auto name = unique("eskew");
  child ahead(leader_args(name, dir, {"--value", "ahead:1"}), dir / "ahead", "+5h");
  BOOST_REQUIRE_MESSAGE(ahead.wait_for_text("LEADER", 10s), slurp(dir / "ahead"));
  auto p = make_provider(fast_options(), "elections");  // the collection mongolock-leader uses
  auto el = p.create_election(name);
  auto [ec, lead] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::leadership>> {
    auto me = el.candidate("behind:2");
    co_return co_await me.async_acquire_for(2500ms, asio::as_tuple(asio::deferred));
  }());
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  auto [ec2, now] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::leader_info>> {
    co_return co_await el.async_leader(asio::as_tuple(asio::deferred));
  }());
  BOOST_TEST(!ec2);
  BOOST_TEST(now.value == "ahead:1");
}

// On the real store: a takeover by a plain lock (no proclaim) shows no leader, not the dead
// leader's value under the new term; a resign removes the value; bad input is refused.
BOOST_FIXTURE_TEST_CASE(values_go_with_their_term_and_bad_input_is_refused, io_fixture) {
  const auto dir = scratch("elect-value");
  const auto name = unique("evalue");
  {
    child dead(leader_args(name, dir, {"--value", "dead:1"}), dir / "dead");
    BOOST_REQUIRE_MESSAGE(dead.wait_for_text("LEADER", 10s), slurp(dir / "dead"));
  }  // SIGKILLed here
  auto p = make_provider(fast_options(), "elections");  // the collection mongolock-leader uses
  auto el = p.create_election(name);
  ml::leader_info after_takeover, after_resign;
  ml::lock_info doc, resigned_doc;
  error_code empty_value, long_value;
  auto plain_lock = p.create_lock(name);  // named: no temporaries inside co_await (GCC 12)
  run([&]() -> asio::awaitable<void> {
    auto plain = co_await plain_lock.async_acquire_for(10000ms);
    after_takeover = co_await el.async_leader();
    doc = co_await p.async_inspect(name);
    co_await plain.async_release();
    auto me = el.candidate("me:3");
    auto lead = co_await me.async_acquire_for(5000ms);
    co_await lead.async_resign();
    after_resign = co_await el.async_leader();
    resigned_doc = co_await p.async_inspect(name);
    auto empty = el.candidate("");
    std::tie(empty_value, std::ignore) = co_await empty.async_acquire(asio::as_tuple(asio::deferred));
    auto too_long = el.candidate(std::string(ml::limits::max_election_value + 1, 'x'));
    std::tie(long_value, std::ignore) = co_await too_long.async_acquire(asio::as_tuple(asio::deferred));
  }());
  BOOST_TEST(!after_takeover.has_leader, "term " << after_takeover.term << " shows '" << after_takeover.value << "'");
  BOOST_TEST(doc.value.empty(), doc.value);
  BOOST_TEST(!after_resign.has_leader);
  BOOST_TEST(resigned_doc.value.empty(), "a release removes the value: " << resigned_doc.value);
  BOOST_TEST((empty_value == ml::errc::invalid_options));
  BOOST_TEST((long_value == ml::errc::invalid_options));
}

BOOST_AUTO_TEST_SUITE_END()
