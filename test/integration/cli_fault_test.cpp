// The command-line tool through the fault proxy (docs/design.md section 11): what a shell user sees
// when the network misbehaves. Every COMMAND is the same job: it takes flock(1) on a file (a second
// job inside at the same time fails to and records OVERLAP) and writes its fencing token to a store
// that refuses lower tokens (records REJECTED), then sleeps. Each test checks the exit codes README
// documents, that no two jobs overlapped, and that nothing is left held.
#include <algorithm>

#include "fault_proxy.hpp"
#include "private_server.hpp"
#include "processes.hpp"
#include "proxy_target.hpp"

using namespace test;
namespace ml = mongolock;

namespace {

constexpr const char* job = R"(dir=$1
exec 9>"$dir/flock"
flock -n 9 || { echo "OVERLAP $MONGOLOCK_FENCING_TOKEN" >> "$dir/verdict"; exit 99; }
(
  flock 8
  max=$(cat "$dir/store" 2>/dev/null || echo 0)
  if [ "$MONGOLOCK_FENCING_TOKEN" -lt "$max" ]; then echo "REJECTED $MONGOLOCK_FENCING_TOKEN" >> "$dir/verdict"
  else echo "$MONGOLOCK_FENCING_TOKEN" > "$dir/store"; echo "RAN $MONGOLOCK_FENCING_TOKEN" >> "$dir/verdict"; fi
) 8>"$dir/store.lock"
sleep "$2"
)";

std::string cli_path() {
  const char* p = std::getenv("MONGOLOCK_CLI");
  BOOST_REQUIRE_MESSAGE(p, "MONGOLOCK_CLI is not set (run through ctest)");
  return p;
}

// io_fixture (a direct provider to look at the lock) plus a proxy and a scratch directory.
struct cli_through_proxy : io_fixture {
  std::optional<fault_proxy> proxy;
  fs::path dir = scratch("cli-faults");
  std::string name = unique("cli-faults");

  cli_through_proxy() {
    const auto up = single_host(server_uri());
    BOOST_REQUIRE(up);
    proxy.emplace(up->host, up->port);
  }
  ~cli_through_proxy() { proxy->pass(); }

  std::string proxied_uri(int selection_ms = 1500) const {
    return "mongodb://127.0.0.1:" + std::to_string(proxy->port()) +
           "/?directConnection=true&serverSelectionTimeoutMS=" + std::to_string(selection_ms);
  }
  // `mongolock [options] run NAME -- sh -c JOB job DIR HOLD_SECONDS`, its output in dir/OUT.
  std::unique_ptr<child> run_job(const std::string& out, const std::string& uri, std::vector<std::string> options,
                                 const std::string& hold) {
    std::vector<std::string> argv{cli_path(), "--uri", uri, "--database", "mongolock_test"};
    argv.insert(argv.end(), options.begin(), options.end());
    for (const std::string a : {"run", name.c_str(), "--", "sh", "-c", job, "job", dir.c_str(), hold.c_str()})
      argv.push_back(a);
    return std::make_unique<child>(argv, dir / out);
  }
  std::string verdict() const { return slurp(dir / "verdict"); }
  std::string output(const std::string& out) const { return slurp(dir / out); }
  ml::lock_info now() {
    auto p = make_provider();
    return run([&]() -> asio::awaitable<ml::lock_info> {
      auto op = p.async_inspect(name, asio::use_awaitable);
      co_return co_await std::move(op);
    }());
  }
  bool held_now() { return now().held; }
};

bool wait_for_file(const fs::path& p, std::chrono::milliseconds limit) {
  const auto t0 = clock::now();
  while (!fs::exists(p) && clock::now() - t0 < limit) std::this_thread::sleep_for(20ms);
  return fs::exists(p);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cli_faults, *boost::unit_test::precondition(proxyable()))

// Renewal replies held: the holder's lease is lost at its deadline, its job is stopped, and a
// waiter's job runs only after that. Exit codes: 74 (lease lost) and 0.
BOOST_FIXTURE_TEST_CASE(a_lost_lease_stops_the_job_before_a_waiter_runs_its_own, cli_through_proxy) {
  auto holder = run_job("holder", proxied_uri(), {"--ttl", "1s"}, "30");
  BOOST_REQUIRE_MESSAGE(wait_for_file(dir / "store", 10s), output("holder"));
  proxy->hold_replies(20s);
  auto waiter = run_job("waiter", server_uri(), {"--ttl", "1s", "--wait", "15s"}, "0.2");
  {
    const int rc = waiter->wait_exit_for(20s);
    BOOST_TEST(rc == 0, "exit " << rc << ": " << output("waiter"));
  }
  proxy->pass();  // the holder's calls are answered: it can finish its shutdown
  {
    const int rc = holder->wait_exit_for(15s);
    BOOST_TEST(rc == 74, "exit " << rc << ": " << output("holder"));
  }
  const auto v = verdict();
  BOOST_TEST(v.find("OVERLAP") == std::string::npos, v);
  BOOST_TEST(v.find("REJECTED") == std::string::npos, v);
  BOOST_TEST(std::count(v.begin(), v.end(), '\n') == 2, v);  // both jobs ran, one after the other
  BOOST_TEST(!held_now());
}

// Every reply 1.2 s late, each way (a round trip of 2.4 s), against a lease of 2 s: each take's
// reply comes after sent + expiry - margin, so it is never a grant. The late client's COMMAND
// never runs, it exits 75 (not acquired within --wait), and the takes that landed were given
// back. Its setup through the slow proxy takes a few round trips, hence the long --wait.
BOOST_FIXTURE_TEST_CASE(late_grants_never_run_the_command_and_are_given_back, cli_through_proxy) {
  auto first = run_job("first", server_uri(), {"--ttl", "2s"}, "2");
  BOOST_REQUIRE_MESSAGE(wait_for_file(dir / "store", 10s), output("first"));
  proxy->latency(1200ms);
  auto late = run_job("late", proxied_uri(15000) + "&socketTimeoutMS=10000", {"--ttl", "2s", "--wait", "20s"}, "0");
  {
    const int rc = first->wait_exit_for(10s);
    BOOST_TEST(rc == 0, "exit " << rc << ": " << output("first"));
  }
  {
    const int rc = late->wait_exit_for(45s);
    BOOST_TEST(rc == 75, "exit " << rc << ": " << output("late"));
  }
  const auto v = verdict();
  BOOST_TEST(std::count(v.begin(), v.end(), '\n') == 1, v);  // the first job only
  proxy->pass();
  const auto info = now();
  BOOST_TEST(!info.held, "left held by " << info.owner);
  // The late client's takes did land (each a token above the first job's), and were given back.
  BOOST_TEST(info.fencing_token > std::stoll(slurp(dir / "store")), "no late take reached the server");
}

// A server that refuses connections: 69 (unreachable), quickly. One that accepts and never
// answers: 69 or 75, within --wait plus the server selection bound. COMMAND never runs.
BOOST_FIXTURE_TEST_CASE(refused_and_blackholed_servers_end_with_the_documented_codes, cli_through_proxy) {
  proxy->refuse();
  const auto t0 = clock::now();
  auto refused = run_job("refused", proxied_uri(), {"--wait", "2s"}, "0");
  {
    const int rc = refused->wait_exit_for(10s);
    BOOST_TEST(rc == 69, "exit " << rc << ": " << output("refused"));
  }
  BOOST_TEST(ms_since(t0) < 6000);
  proxy->blackhole();
  const auto t1 = clock::now();
  auto dark = run_job("dark", proxied_uri() + "&socketTimeoutMS=3000", {"--wait", "2s"}, "0");
  const int rc = dark->wait_exit_for(15s);
  BOOST_TEST((rc == 69 || rc == 75), rc << "\n" << output("dark"));
  BOOST_TEST(ms_since(t1) < 9000);
  BOOST_TEST(verdict().empty(), verdict());
  proxy->pass();
  BOOST_TEST(!held_now());
}

// Connections reset under a running job, twice, a second apart: the renewal that meets a reset
// fails and is retried on a new connection well inside the deadline, so the job finishes
// (exit 0); a waiter's job runs after it.
BOOST_FIXTURE_TEST_CASE(resets_under_a_running_job_do_not_lose_the_lease, cli_through_proxy) {
  auto holder = run_job("holder", proxied_uri(), {"--ttl", "3s"}, "3");
  BOOST_REQUIRE_MESSAGE(wait_for_file(dir / "store", 10s), output("holder"));
  auto waiter = run_job("waiter", server_uri(), {"--ttl", "3s", "--wait", "20s"}, "0");
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(1000ms);
    proxy->reset();
  }
  {
    const int rc = holder->wait_exit_for(15s);
    BOOST_TEST(rc == 0, "exit " << rc << ": " << output("holder"));
  }
  {
    const int rc = waiter->wait_exit_for(20s);
    BOOST_TEST(rc == 0, "exit " << rc << ": " << output("waiter"));
  }
  const auto v = verdict();
  BOOST_TEST(v.find("OVERLAP") == std::string::npos, v);
  BOOST_TEST(v.find("REJECTED") == std::string::npos, v);
  BOOST_TEST(std::count(v.begin(), v.end(), '\n') == 2, v);
  BOOST_TEST(!held_now());
}

BOOST_AUTO_TEST_SUITE_END()

// The server itself goes away (SIGKILL, a crash) while a run waits: on a private server.
BOOST_AUTO_TEST_SUITE(cli_outage)

// `mongolock [options...]` against `server`, its output in dir/OUT.
std::unique_ptr<child> cli_on(const private_server& server, const fs::path& dir, const std::string& out,
                              const std::vector<std::string>& options) {
  std::vector<std::string> argv{cli_path(), "--uri", server.uri, "--database", "mongolock_test"};
  argv.insert(argv.end(), options.begin(), options.end());
  return std::make_unique<child>(argv, dir / out);
}

// A run holding `name` with a 3 s ttl, its command appending "held" to dir/ran then sleeping;
// returned once the command ran.
std::unique_ptr<child> holding(const private_server& server, const fs::path& dir, const std::string& name) {
  const auto ran = dir / "ran";
  auto holder = cli_on(server, dir, "holder", {"--ttl", "3s", "run", name, "--", "sh", "-c", "echo held >> " + ran.string() + "; exec sleep 60"});
  const auto t_held = clock::now();
  while (slurp(ran).empty() && ms_since(t_held) < 10000) std::this_thread::sleep_for(20ms);
  BOOST_REQUIRE_MESSAGE(!slurp(ran).empty(), "the holder did not run: " << slurp(dir / "holder"));
  return holder;
}

// docs/cli.md: "a server outage inside it is waited out: the lock is taken once a server answers
// again, if `--wait` has time left". A run waits with --wait 60s on a lock whose holder has a 3 s
// ttl; the server is killed (the holder's lease ends at its deadline, its command stopped, exit
// 74) and restarted 4 s later on its port (the emulator comes back empty, as after a wipe). The
// waiter, which rode out the outage, takes the lock and runs its command.
BOOST_AUTO_TEST_CASE(a_wait_rides_out_a_server_restart) {
  private_server server("cli-restart-server");
  if (!server.available()) return;
  const auto dir = scratch("cli-restart");
  const auto ran = dir / "ran";
  auto holder = holding(server, dir, "restart");
  auto waiter = cli_on(server, dir, "waiter", {"--wait", "60s", "run", "restart", "--", "sh", "-c", "echo waited >> " + ran.string()});
  std::this_thread::sleep_for(1500ms);  // it has reached the server and found the lock held
  server.kill();
  BOOST_TEST(holder->wait_exit_for(20s) == 74, slurp(dir / "holder"));
  std::this_thread::sleep_for(4s);
  const auto t_back = clock::now();
  server.restart();
  const int rc = waiter->wait_exit_for(40s);
  BOOST_TEST_MESSAGE("waiter: exit " << rc << " " << ms_since(t_back) << " ms after the restart began");
  BOOST_TEST(rc == 0, slurp(dir / "waiter"));
  BOOST_TEST(slurp(ran) == "held\nwaited\n");
  fs::remove_all(dir);
}

// docs/cli.md: "a `--wait` above 0 bounds the wait for the lock", and a run that got no lock exits
// at most about 1 s after it once no server is in reach. A run waits with --wait 3s on a held
// lock; 1.5 s in, the server is killed and stays down. The run exits 75 (a server that answered it
// before stopped answering) about 1 s past its bound, not once the calls it abandoned (a server
// selection in flight, its leave from the lock's line) have each waited out a server selection.
BOOST_AUTO_TEST_CASE(a_bounded_wait_ends_at_its_bound_with_the_server_gone) {
  private_server server("cli-gone-server");
  if (!server.available()) return;
  const auto dir = scratch("cli-gone");
  const auto ran = dir / "ran";
  auto holder = holding(server, dir, "gone");
  const auto t_start = clock::now();
  auto waiter = cli_on(server, dir, "waiter", {"--wait", "3s", "run", "gone", "--", "sh", "-c", "echo waited >> " + ran.string()});
  std::this_thread::sleep_for(1500ms);  // it has reached the server and found the lock held
  server.kill();
  const int rc = waiter->wait_exit_for(30s);
  const auto ms = ms_since(t_start);
  BOOST_TEST_MESSAGE("waiter: exit " << rc << " after " << ms << " ms");
  BOOST_TEST(rc == 75, slurp(dir / "waiter"));
  // The bound, its second, and 2 s for a loaded machine and a sanitizer: less than one abandoned
  // call's server selection (5 s from the kill) would take.
  BOOST_TEST(ms < 6000, ms << " ms: " << slurp(dir / "waiter"));
  BOOST_TEST(holder->wait_exit_for(20s) == 74, slurp(dir / "holder"));
  BOOST_TEST(slurp(ran) == "held\n");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
