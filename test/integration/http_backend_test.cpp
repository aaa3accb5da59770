// The HTTP example (examples/http_backend) as real processes: two instances on loopback share one
// lock collection and one fenced store. Its journal (one line per finished work, CLOCK_MONOTONIC
// interval, fencing token) shows whether two works on one id ever overlapped.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "fixture.hpp"
#include "processes.hpp"

using namespace test;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using tcp = asio::ip::tcp;

namespace {

constexpr const char* database = "mongolock_test";  // io_fixture::make_provider's database

std::string backend_binary() {
  const char* b = std::getenv("MONGOLOCK_HTTP_BACKEND");
  BOOST_REQUIRE_MESSAGE(b, "MONGOLOCK_HTTP_BACKEND is not set (run through ctest)");
  return b;
}

fs::path fresh_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("mongolock-http-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// One process, stdout+stderr in `out`; killed (SIGKILL) if the test leaves it running.
using process = child;

// An instance of the example, started with port 0; `port` is what it printed.
struct backend : process {
  unsigned short port = 0;

  backend(const std::string& collection, const fs::path& store, int work_ms, const std::string& name,
          const std::string& uri = server_uri())
      : process({backend_binary(), "--uri", uri, "--database", database, "--collection", collection,
                 "--port", "0", "--store", store.string(), "--work-ms", std::to_string(work_ms)},
                store.parent_path() / (store.filename().string() + "-" + name + ".log")) {
    const auto t0 = clock::now();
    while (clock::now() - t0 < 10s) {
      const auto text = slurp(out);
      const auto at = text.find("listening on ");
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        port = static_cast<unsigned short>(std::atoi(text.c_str() + at + 13));
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
    BOOST_FAIL(name << " did not start listening:\n" << slurp(out));
  }
};

struct reply {
  int status = 0;
  std::string body;
  std::string content_type;
};

asio::awaitable<void> send_post(tcp::socket& s, unsigned short port, const std::string& id) {
  co_await s.async_connect({asio::ip::address_v4::loopback(), port}, asio::use_awaitable);
  http::request<http::empty_body> req{http::verb::post, "/reports/" + id, 11};
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(false);
  req.prepare_payload();
  co_await http::async_write(s, req, asio::use_awaitable);
}

asio::awaitable<reply> post(unsigned short port, std::string id) {
  tcp::socket s(co_await asio::this_coro::executor);
  co_await send_post(s, port, id);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  co_await http::async_read(s, buffer, res, asio::use_awaitable);
  co_return reply{static_cast<int>(res.result_int()), res.body(), {}};
}

asio::awaitable<reply> get(unsigned short port, std::string target) {
  tcp::socket s(co_await asio::this_coro::executor);
  co_await s.async_connect({asio::ip::address_v4::loopback(), port}, asio::use_awaitable);
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(false);
  co_await http::async_write(s, req, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  co_await http::async_read(s, buffer, res, asio::use_awaitable);
  co_return reply{static_cast<int>(res.result_int()), res.body(), std::string(res[http::field::content_type])};
}

asio::awaitable<void> sleep(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(asio::use_awaitable);
}

// Polls the lock document until someone holds it.
asio::awaitable<bool> wait_until_held(mongolock::provider& p, std::string name) {
  for (int i = 0; i < 250; ++i) {
    auto [ec, info] = co_await p.async_inspect(name, asio::as_tuple(asio::deferred));
    if (!ec && info.held) co_return true;
    co_await sleep(20ms);
  }
  co_return false;
}

struct journal_line {
  std::string id;
  std::int64_t token = 0, start_ns = 0, end_ns = 0;
  long pid = 0;
};

std::vector<journal_line> read_journal(const fs::path& store) {
  std::istringstream in(slurp(store / "journal"));
  std::vector<journal_line> lines;
  journal_line l;
  while (in >> l.id >> l.token >> l.start_ns >> l.end_ns >> l.pid) lines.push_back(l);
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http_backend)

BOOST_AUTO_TEST_CASE(bad_arguments_exit_64) {
  const auto dir = fresh_dir("args");
  process none({backend_binary()}, dir / "none");
  BOOST_TEST(none.wait_exit_for(5s) == 64);
  process port({backend_binary(), "--uri", "mongodb://127.0.0.1:1", "--database", "d", "--collection", "c", "--port",
                "70000", "--store", dir.string()},
               dir / "port");
  BOOST_TEST(port.wait_exit_for(5s) == 64);
  BOOST_TEST(slurp(dir / "port").find("--port") != std::string::npos, slurp(dir / "port"));
}

BOOST_AUTO_TEST_CASE(help_exits_0_with_the_usage) {
  const auto dir = fresh_dir("help");
  process help({backend_binary(), "--help"}, dir / "help");
  BOOST_TEST(help.wait_exit_for(5s) == 0, slurp(dir / "help"));
  BOOST_TEST(slurp(dir / "help").find("usage: mongolock-http-backend") != std::string::npos, slurp(dir / "help"));
}

// No server answers: 503 with the reason, not a hang and not a 500.
BOOST_FIXTURE_TEST_CASE(server_unavailable_answers_503, io_fixture) {
  const auto store = fresh_dir("down") / "store";
  fs::create_directories(store);
  backend lonely(unique("http"), store, 20, "lonely", "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300");
  const auto r = run(post(lonely.port, "f"));
  BOOST_TEST(r.status == 503, r.status << " " << r.body);
  BOOST_TEST(r.body.find("lock server") != std::string::npos, r.body);
}

// A down server and a URI that sets no serverSelectionTimeoutMS: the request still gets its 503
// within the example's own bound (--lock-timeout-ms, 1 s by default), not after the driver's
// server selection timeout (5 s by client_options' default). The limit below is generous: this
// checks for a prompt 503 rather than a hang, not the timing.
BOOST_FIXTURE_TEST_CASE(server_down_answers_503_within_the_request_bound, io_fixture) {
  const auto store = fresh_dir("bounded") / "store";
  fs::create_directories(store);
  backend lonely(unique("http"), store, 20, "bounded", "mongodb://127.0.0.1:1/");
  const auto t0 = clock::now();
  const auto r = run(post(lonely.port, "g"));
  const auto took_ms = ms_since(t0);
  BOOST_TEST_MESSAGE("503 after " << took_ms << " ms: " << r.body);
  BOOST_TEST(r.status == 503, r.status << " " << r.body);
  BOOST_TEST(r.body.find("lock server") != std::string::npos, r.body);
  BOOST_TEST(took_ms < 3500, "answered after " << took_ms << " ms");
}

// GET /metrics: the provider's counters as a scraper reads them, after one rendered report.
BOOST_FIXTURE_TEST_CASE(metrics_are_served_for_a_scraper, io_fixture) {
  const auto store = fresh_dir("metrics") / "store";
  fs::create_directories(store);
  backend one(unique("http"), store, 20, "metrics");
  const auto rendered = run(post(one.port, "m"));
  BOOST_TEST(rendered.status == 200, rendered.status << " " << rendered.body);
  const auto m = run(get(one.port, "/metrics"));
  BOOST_TEST(m.status == 200, m.status << " " << m.body);
  BOOST_TEST(m.content_type.rfind("text/plain; version=0.0.4", 0) == 0u, m.content_type);
  BOOST_TEST(m.body.find("\nmongolock_acquisitions_total 1\n") != std::string::npos, m.body);
  BOOST_TEST(m.body.find("\nmongolock_releases_total 1\n") != std::string::npos, m.body);
  BOOST_TEST(m.body.find("# TYPE mongolock_acquire_wait_seconds histogram") != std::string::npos, m.body);
}

// 4 clients x 15 requests over ids a, b, c, alternating between two instances.
BOOST_FIXTURE_TEST_CASE(concurrent_requests_never_overlap_per_id, io_fixture) {
  const auto collection = unique("http");
  const auto store = fresh_dir("mutex") / "store";
  fs::create_directories(store);
  backend one(collection, store, 40, "one"), two(collection, store, 40, "two");
  std::vector<reply> replies;  // appended on the fixture's strand only
  auto client = [&](int k) -> asio::awaitable<void> {
    static const char* ids[] = {"a", "b", "c"};
    for (int j = 0; j < 15; ++j) {
      const auto port = (k + j) % 2 ? one.port : two.port;
      replies.push_back(co_await post(port, ids[(k + j) % 3]));
    }
  };
  run([&]() -> asio::awaitable<void> {
    using namespace asio::experimental::awaitable_operators;
    co_await (client(0) && client(1) && client(2) && client(3));
  }(), 60s);

  std::map<int, int> by_status;
  std::set<std::int64_t> tokens_answered;
  for (const auto& r : replies) {
    ++by_status[r.status];
    if (r.status == 409) BOOST_TEST(r.body.find("\"busy\"") != std::string::npos, r.body);
    if (r.status == 200) tokens_answered.insert(std::atoll(r.body.c_str() + r.body.find("\"token\":") + 8));
    BOOST_TEST((r.status == 200 || r.status == 409), r.status << " " << r.body);
  }
  BOOST_TEST_MESSAGE("replies: " << by_status[200] << " x 200, " << by_status[409] << " x 409");
  BOOST_TEST(replies.size() == 60u);
  BOOST_TEST(by_status[409] > 0, "contended ids must see 409s");
  BOOST_TEST(by_status[200] > 0);

  auto journal = read_journal(store);
  BOOST_TEST(journal.size() == static_cast<std::size_t>(by_status[200]), "one journal line per 200");
  std::set<long> pids;
  std::map<std::string, std::vector<journal_line>> per_id;
  for (const auto& l : journal) {
    per_id[l.id].push_back(l);
    pids.insert(l.pid);
    BOOST_TEST(tokens_answered.count(l.token) == 1u, "token " << l.token << " was answered with 200");
  }
  BOOST_TEST(pids.size() == 2u, "both instances did work");
  for (auto& [id, lines] : per_id) {
    std::sort(lines.begin(), lines.end(), [](auto& x, auto& y) { return x.start_ns < y.start_ns; });
    for (std::size_t i = 1; i < lines.size(); ++i) {
      BOOST_TEST(lines[i - 1].end_ns <= lines[i].start_ns, "id " << id << ": work " << i << " overlaps the one before");
      BOOST_TEST(lines[i - 1].token < lines[i].token, "id " << id << ": tokens must increase in start order");
    }
  }
  // Each report is a MongoDB document fenced by the last token that wrote it: a stale holder's
  // write (an older token, as a holder paused past its lease would carry) is refused, its
  // reason naming the document's fence (docs/design.md section 15).
  const mongolock::fenced_collection reports{database, collection + "_reports"};
  for (auto& [id, lines] : per_id) {
    const auto newest = lines.back().token;
    const std::string filter = R"({"_id": ")" + id + R"("})";
    mongolock::diagnostics why;
    auto [ec, r] = run([&]() -> asio::awaitable<std::tuple<boost::system::error_code, mongolock::fenced_result>> {
      const std::string stale = R"({"$set": {"report": "stale"}})";
      co_return co_await mongolock::async_fenced_update(*db, newest - 1, reports, filter, stale, why,
                                                        asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST((ec == mongolock::errc::fenced_out), id << ": " << ec.message());
    BOOST_TEST(why.reason.find("fence " + std::to_string(newest) + " is above") != std::string::npos, why.reason);
  }
}

// The client hangs up while its work runs: the lock must be free at once, not at lease expiry.
BOOST_FIXTURE_TEST_CASE(client_disconnect_frees_the_lock_at_once, io_fixture) {
  const auto collection = unique("http");
  const auto store = fresh_dir("hangup") / "store";
  fs::create_directories(store);
  backend slow(collection, store, 20000, "slow"), quick(collection, store, 20, "quick");
  auto locks = make_provider(fast_options(), collection);
  reply after;
  long long freed_after_ms = -1;
  run([&]() -> asio::awaitable<void> {
    tcp::socket s(co_await asio::this_coro::executor);
    co_await send_post(s, slow.port, "d");
    BOOST_REQUIRE(co_await wait_until_held(locks, "report-d"));
    s.close();  // mid-work: 20 s of work left
    const auto t0 = clock::now();
    for (int i = 0; i < 20 && after.status != 200; ++i) {
      if (i > 0) co_await sleep(50ms);
      after = co_await post(quick.port, "d");
    }
    freed_after_ms = ms_since(t0);
  }());
  BOOST_TEST_MESSAGE("lock taken by the other instance " << freed_after_ms << " ms after the hang-up");
  BOOST_TEST(after.status == 200, after.status << " " << after.body);
  BOOST_TEST(freed_after_ms < 1000);
  const auto journal = read_journal(store);
  BOOST_TEST(journal.size() == 1u, "only the quick instance finished a work");
  BOOST_TEST(slow.running(), "the slow instance survives a hang-up:\n" << slurp(slow.out));
}

// SIGTERM to an instance that holds a lease: the in-flight request gets 503, the process exits 0
// promptly, and the lock is free for the other instance.
BOOST_FIXTURE_TEST_CASE(sigterm_releases_the_lease_and_exits_zero, io_fixture) {
  const auto collection = unique("http");
  const auto store = fresh_dir("sigterm") / "store";
  fs::create_directories(store);
  backend holder(collection, store, 20000, "holder"), other(collection, store, 20, "other");
  auto locks = make_provider(fast_options(), collection);
  auto in_flight = asio::co_spawn(asio::make_strand(io), post(holder.port, "e"), asio::use_future);
  BOOST_REQUIRE(run(wait_until_held(locks, "report-e")));

  ::kill(holder.pid, SIGTERM);
  const auto t0 = clock::now();
  BOOST_TEST(holder.wait_exit_for(5s) == 0, slurp(holder.out));
  const auto exited_ms = ms_since(t0);
  BOOST_TEST_MESSAGE("exited " << exited_ms << " ms after SIGTERM");
  BOOST_TEST(exited_ms < 2000);
  BOOST_REQUIRE(in_flight.wait_for(2s) == std::future_status::ready);
  reply cut;  // status 0: the connection was cut without a reply
  try {
    cut = in_flight.get();
  } catch (const std::exception& e) {
    cut.body = e.what();
  }
  BOOST_TEST(cut.status == 503, cut.status << " " << cut.body);

  const auto next = run(post(other.port, "e"));  // at once: no waiting for the 30 s expiry
  BOOST_TEST(next.status == 200, next.status << " " << next.body);
  BOOST_TEST(read_journal(store).size() == 1u, "the cancelled work wrote nothing");
}

BOOST_AUTO_TEST_SUITE_END()
