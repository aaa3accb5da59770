// semaphore with real processes, real signals and skewed clocks (docs/design.md section 10). Each
// worker holds one permit; every permit has its own marker (overlap), journal (token order) and
// fencing-checked resource, and holder-PID files count the holders (never more than N).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "fixture.hpp"
#include "processes.hpp"

using namespace test;
using boost::system::error_code;
namespace ml = mongolock;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> permit_args(const std::string& name, int permits, const fs::path& dir,
                                     std::vector<std::string> extra) {
  extra.insert(extra.begin(), {"--permits", std::to_string(permits)});
  return worker_args(name, dir, std::move(extra));
}

// The permit name a worker printed in its "acquired token=NAME#k:T" line.
std::string permit_of(const fs::path& out) {
  const auto text = slurp(out);
  const auto at = text.find("token=");
  if (at == std::string::npos) return {};
  const auto colon = text.find(':', at);
  return text.substr(at + 6, colon - at - 6);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(semaphore)

BOOST_AUTO_TEST_CASE(five_processes_never_hold_more_than_two_permits) {
  const auto dir = scratch("sem-many");
  const auto name = unique("sem");
  std::vector<std::unique_ptr<child>> kids;
  for (int i = 0; i < 5; ++i)
    kids.push_back(std::make_unique<child>(permit_args(name, 2, dir, {"--count", "4", "--hold-ms", "30"}),
                                           dir / ("out" + std::to_string(i))));
  const auto t0 = clock::now();
  for (auto& k : kids) BOOST_TEST(k->wait_exit() == 0);
  BOOST_TEST_MESSAGE("20 rounds of 5 processes over 2 permits in " << ms_since(t0) << " ms");
  std::string all;
  for (int i = 0; i < 5; ++i) all += slurp(dir / ("out" + std::to_string(i)));
  BOOST_TEST(all.find("OVERLAP") == std::string::npos, all);
  BOOST_TEST(all.find("REJECTED") == std::string::npos, all);
  std::size_t rounds = 0;
  for (int k = 1; k <= 2; ++k) {
    const auto tokens = journal_tokens(dir / ("journal-" + name + "#" + std::to_string(k)));
    rounds += tokens.size();
    for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST(tokens[i] > tokens[i - 1], "permit " << k);
  }
  BOOST_TEST(rounds == 20u);
}

BOOST_FIXTURE_TEST_CASE(a_killed_holders_permit_is_taken_over_after_expiry, io_fixture) {
  const auto dir = scratch("sem-kill");
  const auto name = unique("skill");
  child a(permit_args(name, 2, dir, {"--forever", "--expiry-ms", "1000"}), dir / "a");
  BOOST_REQUIRE_MESSAGE(a.wait_for_text("acquired", 10s), slurp(dir / "a"));
  child b(permit_args(name, 2, dir, {"--forever", "--expiry-ms", "1000"}), dir / "b");
  BOOST_REQUIRE_MESSAGE(b.wait_for_text("acquired", 10s), slurp(dir / "b"));
  ::kill(a.pid, SIGKILL);
  const auto killed = clock::now();
  BOOST_TEST(a.wait_exit() == 128 + SIGKILL);
  auto p = make_provider();
  auto s = p.create_semaphore(name, 2);
  long long waited = 0;
  std::string got;
  std::int64_t token = 0;
  run([&]() -> asio::awaitable<void> {
    auto permit = co_await s.async_acquire_for(10000ms);
    waited = ms_since(killed);
    got = permit.name();
    token = permit.fencing_token();
    co_await permit.async_release();
  }());
  BOOST_TEST_MESSAGE("permit " << got << " taken over " << waited << " ms after SIGKILL");
  BOOST_TEST(got == permit_of(dir / "a"), "the dead holder's permit, not the live one's");
  BOOST_TEST(waited >= 1000);  // never before the dead holder's expiry
  BOOST_TEST(waited < 1100 + 2000);
  BOOST_TEST(token > read_token(dir / ("resource-" + got)));
  BOOST_TEST(slurp(dir / "b").find("LOST") == std::string::npos, "the live holder keeps its permit");
}

// A holder paused past its lease: on resume its work is cancelled, and the new holder's token
// fences its late writes off.
BOOST_FIXTURE_TEST_CASE(a_stopped_holder_is_cancelled_on_resume_and_fenced_out, io_fixture) {
  const auto dir = scratch("sem-stop");
  const auto name = unique("sstop");
  auto p = make_provider();
  auto s = p.create_semaphore(name, 1);
  std::int64_t mine = 0;
  const auto resource = dir / ("resource-" + name + "#1");
  a_stopped_holder_resumes_to_a_lost_lease(
      *this, dir, permit_args(name, 1, dir, {"--forever", "--expiry-ms", "1000"}),
      [&](auto t) { return s.async_acquire_for(t, asio::use_awaitable); },
      [&](const ml::lease& permit) {
        mine = permit.fencing_token();
        write_resource(resource, mine);
      });
  BOOST_TEST(read_token(resource) == mine);
}

// A holder whose clock runs 5 hours ahead keeps its permit; a waiter 3 hours behind waits for it.
BOOST_FIXTURE_TEST_CASE(clocks_off_by_hours_change_nothing_for_a_permit, io_fixture) {
  if (skip_without_faketime()) return;
  const auto dir = scratch("sem-skew");
  const auto name = unique("sskew");
  auto p = make_provider();
  auto s = p.create_semaphore(name, 1);
  clocks_off_by_hours_change_nothing(
      *this, dir, permit_args(name, 1, dir, {"--forever", "--expiry-ms", "1000"}),
      permit_args(name, 1, dir, {"--count", "1", "--hold-ms", "10", "--expiry-ms", "1000"}),
      [&](auto t) { return s.async_acquire_for(t, asio::as_tuple(asio::use_awaitable)); },
      [&](auto t) { return s.async_acquire_for(t, asio::use_awaitable); });
}

// Against the real driver and server: the declaration is kept by the store, and another number
// of permits (or a worker asking for one) is refused with its reason.
BOOST_FIXTURE_TEST_CASE(another_number_of_permits_is_refused_with_a_reason, io_fixture) {
  const auto dir = scratch("sem-bad");
  const auto name = unique("sbad");
  auto p = make_provider();
  auto three = p.create_semaphore(name, 3);
  auto four = make_provider().create_semaphore(name, 4);
  auto none = p.create_semaphore(name, 0);
  run([&]() -> asio::awaitable<void> {
    auto permit = co_await three.async_acquire_for(1000ms);
    ml::diagnostics d;
    auto [ec, other] = co_await four.async_acquire_for(1000ms, d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::declaration_mismatch), ec.message());
    BOOST_TEST(d.reason == "'" + name + "' is declared as a semaphore of 3 permits, not a semaphore of 4");
    auto [ec0, zero] = co_await none.async_acquire_for(1000ms, d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec0 == ml::errc::invalid_options), ec0.message());
    co_await permit.async_release();
  }());
  child worker(permit_args(name, 5, dir, {"--count", "1"}), dir / "out");
  BOOST_TEST(worker.wait_exit() == 2);
  BOOST_TEST(slurp(dir / "out").find("declared with another kind or number of permits") != std::string::npos,
             slurp(dir / "out"));
}

BOOST_AUTO_TEST_SUITE_END()
