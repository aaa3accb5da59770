// Real processes and real signals: several processes on one lock, SIGKILL and SIGSTOP of a
// holder, and holders/waiters whose clocks are off by hours (faketime).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
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

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The wall clock a worker printed when it acquired ("... wallclock=SECONDS").
std::int64_t wallclock_of(const fs::path& out) {
  const auto text = slurp(out);
  const auto at = text.find("wallclock=");
  return at == std::string::npos ? 0 : std::atoll(text.c_str() + at + 10);
}


}  // namespace

BOOST_AUTO_TEST_SUITE(process)

BOOST_AUTO_TEST_CASE(four_processes_never_overlap) {
  const auto dir = scratch("procs");
  const auto name = unique("procs");
  std::vector<std::unique_ptr<child>> kids;
  for (int i = 0; i < 4; ++i)
    kids.push_back(std::make_unique<child>(worker_args(name, dir, {"--count", "4", "--hold-ms", "20"}),
                                           dir / ("out" + std::to_string(i))));
  for (auto& k : kids) BOOST_TEST(k->wait_exit() == 0);
  std::string all;
  for (int i = 0; i < 4; ++i) all += slurp(dir / ("out" + std::to_string(i)));
  BOOST_TEST(all.find("OVERLAP") == std::string::npos, all);
  BOOST_TEST(all.find("REJECTED") == std::string::npos, all);
  const auto tokens = journal_tokens(dir / "journal");
  BOOST_TEST(tokens.size() == 16u);
  for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST(tokens[i] > tokens[i - 1]);
}

BOOST_FIXTURE_TEST_CASE(killed_holder_is_taken_over_after_expiry, io_fixture) {
  const auto dir = scratch("kill");
  const auto name = unique("kill");
  child holder(worker_args(name, dir, {"--forever", "--expiry-ms", "1000"}), dir / "out");
  BOOST_REQUIRE(holder.wait_for_text("acquired", 10s));
  ::kill(holder.pid, SIGKILL);
  const auto killed = clock::now();
  BOOST_TEST(holder.wait_exit() == 128 + SIGKILL);
  auto p = make_provider();
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire_for(10000ms);
    const auto waited = ms_since(killed);
    BOOST_TEST_MESSAGE("taken over " << waited << " ms after SIGKILL");
    BOOST_TEST(waited >= 1000);  // never before the dead holder's expiry
    BOOST_TEST(waited < 4000);
    co_await l.async_release();
  }());
}

BOOST_FIXTURE_TEST_CASE(stopped_holder_is_cancelled_on_resume_and_fenced_out, io_fixture) {
  const auto dir = scratch("stop");
  const auto name = unique("stop");
  child holder(worker_args(name, dir, {"--forever", "--expiry-ms", "1000"}), dir / "out");
  BOOST_REQUIRE(holder.wait_for_text("acquired", 10s));
  ::kill(holder.pid, SIGSTOP);  // a GC pause / VM freeze longer than the lease
  auto p = make_provider();
  std::int64_t mine = 0;
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire_for(10000ms);
    mine = l.fencing_token();
    // Write through the token-checking resource, as the new holder (the old one may have been
    // stopped before its first write created the file).
    write_resource(dir / "resource", mine);
    ::kill(holder.pid, SIGCONT);
    asio::steady_timer t(co_await asio::this_coro::executor, 1500ms);
    co_await t.async_wait(asio::deferred);  // the old holder runs again meanwhile
    BOOST_TEST(l.held());
    co_await l.async_release();
  }());
  BOOST_TEST(holder.wait_for_text("LOST", 5s), slurp(dir / "out"));
  BOOST_TEST(holder.wait_exit() == 3);
  BOOST_TEST(read_token(dir / "resource") == mine);  // the stale holder never overwrote it
  BOOST_TEST_MESSAGE("old holder output:\n" << slurp(dir / "out"));
}

// The offset the clock-skew tests use for a process behind the others still lets its Asio timers
// fire (a raw "-5h" on a machine up for less than 5 hours did not: none of 200 fired).
BOOST_AUTO_TEST_CASE(a_process_set_behind_still_fires_its_timers) {
  if (skip_without_faketime()) return;
  const auto dir = scratch("probe");
  child probe({program_path("MONGOLOCK_TIMER_PROBE")}, dir / "out", behind(5));
  BOOST_TEST(probe.wait_exit_for(10s) == 0, slurp(dir / "out"));
}

BOOST_FIXTURE_TEST_CASE(clocks_off_by_hours_change_nothing, io_fixture) {
  if (skip_without_faketime()) return;
  const auto dir = scratch("skew");
  const auto name = unique("skew");
  auto p = make_provider();
  // A holder whose clock runs 5 hours ahead keeps its lease: nobody treats it as expired.
  {
    child holder(worker_args(name, dir, {"--forever", "--expiry-ms", "1000"}), dir / "ahead", "+5h");
    BOOST_REQUIRE_MESSAGE(holder.wait_for_text("acquired", 10s), slurp(dir / "ahead"));
    BOOST_TEST(wallclock_of(dir / "ahead") - now_seconds() > 4 * 3600, "the holder's clock is really skewed");
    auto [ec, l] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lease>> {
      co_return co_await p.create_lock(name).async_acquire_for(2500ms, asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST((ec == ml::errc::timeout), "a skewed live holder must not be taken over");
  }  // killed here
  // A live holder whose clock runs 5 hours BEHIND looks long silent to a one-shot try that
  // confirms silent holders: it spends one observation window, sees the heartbeat move: busy.
  {
    child holder(worker_args(name, dir, {"--forever", "--expiry-ms", "1000"}), dir / "behind-holder", behind(5));
    BOOST_REQUIRE_MESSAGE(holder.wait_for_text("acquired", 10s), slurp(dir / "behind-holder"));
    const auto t0 = clock::now();
    auto [ec, l] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lease>> {
      co_return co_await p.create_lock(name).async_try_acquire({.confirm_silent_holder = true},
                                                               asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST((ec == ml::errc::busy), ec.message());
    BOOST_TEST(ms_since(t0) < 1500);  // bounded by expiry + margin
  }
  // A waiter whose clock runs 3 hours behind neither steals a live lock nor waits forever.
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire_for(10000ms);  // after the killed holder expires
    child waiter(worker_args(name, dir, {"--count", "1", "--hold-ms", "10", "--expiry-ms", "1000"}), dir / "behind",
                 behind(3));
    asio::steady_timer t(co_await asio::this_coro::executor, 2500ms);
    co_await t.async_wait(asio::deferred);
    BOOST_TEST(slurp(dir / "behind").find("acquired") == std::string::npos, slurp(dir / "behind"));
    co_await l.async_release();
    BOOST_TEST(waiter.wait_for_text("released", 5s), slurp(dir / "behind"));
    BOOST_TEST(now_seconds() - wallclock_of(dir / "behind") >= behind_seconds(3) - 60, "the waiter's clock is really skewed");
  }());
}

BOOST_AUTO_TEST_SUITE_END()
