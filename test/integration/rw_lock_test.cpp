// rw_lock with real processes, real signals and skewed clocks (docs/design.md section 10). Readers
// make a reader-PID file and writers a writer file: a reader beside a writer prints OVERLAP.
// Writers write a fencing-checked resource with their highest token and journal it.
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

// A reader or writer ("--read" / "--write") of `name` with 3 read permits.
std::vector<std::string> rw_args(const std::string& name, const char* side, const fs::path& dir,
                                 std::vector<std::string> extra) {
  extra.insert(extra.begin(), {side, "--readers", "3"});
  return worker_args(name, dir, std::move(extra));
}

ml::rw_lock three_readers(ml::provider& p, const std::string& name) {
  ml::rw_options o;
  o.max_readers = 3;
  return p.create_rw_lock(name, o);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rw_lock)

BOOST_AUTO_TEST_CASE(readers_and_writers_in_five_processes_never_meet) {
  const auto dir = scratch("rw-many");
  const auto name = unique("rw");
  std::vector<std::unique_ptr<child>> kids;
  for (int i = 0; i < 3; ++i)
    kids.push_back(std::make_unique<child>(rw_args(name, "--read", dir, {"--count", "5", "--hold-ms", "40"}),
                                           dir / ("out-reader" + std::to_string(i))));
  for (int i = 0; i < 2; ++i)
    kids.push_back(std::make_unique<child>(rw_args(name, "--write", dir, {"--count", "3", "--hold-ms", "20"}),
                                           dir / ("out-writer" + std::to_string(i))));
  const auto t0 = clock::now();
  for (auto& k : kids) BOOST_TEST(k->wait_exit() == 0);
  BOOST_TEST_MESSAGE("15 reads and 6 writes in 5 processes in " << ms_since(t0) << " ms");
  std::string all;
  for (int i = 0; i < 3; ++i) all += slurp(dir / ("out-reader" + std::to_string(i)));
  for (int i = 0; i < 2; ++i) all += slurp(dir / ("out-writer" + std::to_string(i)));
  BOOST_TEST(all.find("OVERLAP") == std::string::npos, all);
  BOOST_TEST(all.find("REJECTED") == std::string::npos, all);
  const auto tokens = journal_tokens(dir / "journal");
  BOOST_TEST(tokens.size() == 6u);
  for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST(tokens[i] > tokens[i - 1]);
}

// A writer killed while holding: NAME#w, then every permit, each after its observed expiry.
BOOST_FIXTURE_TEST_CASE(a_killed_writer_is_taken_over_after_expiry, io_fixture) {
  const auto dir = scratch("rw-kill");
  const auto name = unique("rwkill");
  child writer(rw_args(name, "--write", dir, {"--forever", "--expiry-ms", "1000"}), dir / "out");
  BOOST_REQUIRE_MESSAGE(writer.wait_for_text("acquired", 10s), slurp(dir / "out"));
  ::kill(writer.pid, SIGKILL);
  const auto killed = clock::now();
  BOOST_TEST(writer.wait_exit() == 128 + SIGKILL);
  auto p = make_provider();
  auto l = three_readers(p, name);
  long long waited = 0;
  std::int64_t token = 0;
  run([&]() -> asio::awaitable<void> {
    auto writer = l.writer();  // named: GCC 12 and temporaries in co_await
    auto w = co_await writer.async_acquire_for(10000ms);
    waited = ms_since(killed);
    token = w.highest_fencing_token();
    co_await w.async_release();
  }());
  BOOST_TEST_MESSAGE("write lock taken over " << waited << " ms after SIGKILL");
  BOOST_TEST(waited >= 1000);
  BOOST_TEST(waited < 2 * 1100 + 2000);  // NAME#w's window, then the permits' (README)
  BOOST_TEST(token > read_token(dir / "resource"));
}

// A reader paused past its lease is cancelled on resume; a writer took over meanwhile.
BOOST_FIXTURE_TEST_CASE(a_stopped_reader_is_cancelled_on_resume, io_fixture) {
  const auto dir = scratch("rw-stop");
  const auto name = unique("rwstop");
  auto p = make_provider();
  auto l = three_readers(p, name);
  a_stopped_holder_resumes_to_a_lost_lease(
      *this, dir, rw_args(name, "--read", dir, {"--forever", "--expiry-ms", "1000"}),
      [&](auto t) { return l.writer().async_acquire_for(t, asio::use_awaitable); }, [](const ml::multi_lease&) {});
}

// A writer whose clock runs 5 hours ahead keeps the lock; a reader 3 hours behind waits for it.
BOOST_FIXTURE_TEST_CASE(clocks_off_by_hours_change_nothing_for_a_rw_lock, io_fixture) {
  if (skip_without_faketime()) return;
  const auto dir = scratch("rw-skew");
  const auto name = unique("rwskew");
  auto p = make_provider();
  auto l = three_readers(p, name);
  // A reader does not overtake the skewed live writer; our writer then keeps the reader behind out.
  clocks_off_by_hours_change_nothing(
      *this, dir, rw_args(name, "--write", dir, {"--forever", "--expiry-ms", "1000"}),
      rw_args(name, "--read", dir, {"--count", "1", "--hold-ms", "10", "--expiry-ms", "1000"}),
      [&](auto t) { return l.reader().async_acquire_for(t, asio::as_tuple(asio::use_awaitable)); },
      [&](auto t) { return l.writer().async_acquire_for(t, asio::use_awaitable); });
}

// Against the real driver and server: a semaphore's name, or another max_readers, is refused.
BOOST_FIXTURE_TEST_CASE(a_name_declared_otherwise_is_refused_with_a_reason, io_fixture) {
  const auto name = unique("rwbad");
  auto p = make_provider();
  auto sem = p.create_semaphore(name, 3);
  auto l = three_readers(p, name);
  auto other = p.create_rw_lock(name + "-2");
  ml::rw_options five;
  five.max_readers = 5;
  auto other5 = make_provider().create_rw_lock(name + "-2", five);
  run([&]() -> asio::awaitable<void> {
    auto permit = co_await sem.async_acquire_for(1000ms);
    ml::diagnostics d;
    auto writer = l.writer();  // named: GCC 12 and temporaries in co_await
    auto [ec, w] = co_await writer.async_acquire_for(1000ms, d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::declaration_mismatch), ec.message());
    BOOST_TEST(d.reason == "'" + name + "' is declared as a semaphore of 3 permits, not a rw_lock of 3");
    co_await permit.async_release();
    auto reader = other.reader(), reader5 = other5.reader();
    auto r = co_await reader.async_acquire_for(1000ms);
    auto [ec5, r5] = co_await reader5.async_acquire_for(1000ms, d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec5 == ml::errc::declaration_mismatch), ec5.message());
    BOOST_TEST(d.reason.find("rw_lock of 16 permits, not a rw_lock of 5") != std::string::npos, d.reason);
    co_await r.async_release();
  }());
}

BOOST_AUTO_TEST_SUITE_END()
