// mongolock-leader: leader election across processes. Each candidate campaigns with a value (an
// address, say); the winner leads until it resigns, loses its lease or is killed, and writes its
// term through a fencing-checked resource while it leads. An observer prints each change.
//
//   mongolock-leader --uri URI --name NAME --value VALUE [--expiry-ms E] [--dir DIR] [--lead-ms N]
//   mongolock-leader --uri URI --name NAME --observe [--expiry-ms E]
//
// A candidate prints "LEADER term=T value=V" when it wins, "LOST: ..." and exits 3 if its lease
// is lost, "RESIGNED" and exits 0 after --lead-ms (default: lead until killed). An observer
// prints "leader term=T value=V" or "no leader" for each change, until killed. Scripted in
// scripts/leader-demo.sh: three candidates, the leader killed twice, the term advancing.
#include <unistd.h>

#include <boost/asio.hpp>
#include <iostream>
#include <string>

#include "fenced_file.hpp"
#include "mongolock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct args {
  std::string uri = "mongodb://127.0.0.1:27017", name = "leader", value, dir = ".", db = "mongolock_demo";
  int expiry_ms = 3000, lead_ms = 0;  // 0: lead until killed
  bool observe = false;
};

void say(const std::string& line) { examples::say("leader", line); }

// Through the fencing-checked resource (fenced_file.hpp); a refusal is printed.
bool fenced_write(const std::string& path, std::int64_t term) {
  return examples::fenced_write("leader", path, "term", term);
}

// The leader's work: runs under the leadership's guard, so a lost lease cancels it.
asio::awaitable<void> lead(const args& a, std::int64_t term) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(a.lead_ms);
  while (a.lead_ms == 0 || std::chrono::steady_clock::now() < until) {
    fenced_write(a.dir + "/resource", term);
    t.expires_after(50ms);
    co_await t.async_wait(asio::deferred);
  }
}

asio::awaitable<int> candidate(const args& a, mongolock::election& el) {
  auto me = el.candidate(a.value);  // named: GCC 12 and temporaries in co_await
  auto [ec, leading] = co_await me.async_acquire(asio::as_tuple(asio::deferred));
  if (ec) {
    say("ERROR campaigning: " + ec.message());
    co_return 2;
  }
  say("LEADER term=" + std::to_string(leading.term()) + " value=" + leading.value());
  try {
    co_await leading.async_guard(lead(a, leading.term()));
  } catch (const boost::system::system_error& e) {
    say(std::string("LOST: ") + e.code().message());
    co_return 3;
  }
  co_await leading.async_resign(asio::as_tuple(asio::deferred));
  say("RESIGNED");
  co_return 0;
}

asio::awaitable<int> observer(mongolock::election& el) {
  auto changes = el.observe(100ms);
  for (;;) {
    auto [ec, now] = co_await changes.async_next(asio::as_tuple(asio::deferred));
    if (ec) {
      say("ERROR observing: " + ec.message());
      co_return 2;
    }
    say(now.has_leader ? "leader term=" + std::to_string(now.term) + " value=" + now.value : "no leader");
  }
}

asio::awaitable<int> run(const args& a) {
  // The executor first: GCC 12 miscompiles a co_await inside a constructor's arguments (the
  // client's options were destroyed twice).
  auto ex = co_await asio::this_coro::executor;
  mongolock::client db(ex, a.uri);
  mongolock::lock_options opts;
  opts.expiry = std::chrono::milliseconds(a.expiry_ms);
  mongolock::provider locks(db, a.db, "elections", opts);
  auto el = locks.create_election(a.name);
  // Named, not temporaries inside co_await: GCC 12 may destroy those twice.
  auto role = a.observe ? observer(el) : candidate(a, el);
  const int rc = co_await std::move(role);
  co_await locks.async_shutdown(asio::as_tuple(asio::deferred));
  co_return rc;
}

}  // namespace

int main(int argc, char** argv) {
  args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "missing value for " << k << "\n";
        std::exit(64);
      }
      return argv[++i];
    };
    try {
      if (k == "--uri") a.uri = next();
      else if (k == "--name") a.name = next();
      else if (k == "--value") a.value = next();
      else if (k == "--dir") a.dir = next();
      else if (k == "--db") a.db = next();
      else if (k == "--expiry-ms") a.expiry_ms = std::stoi(next());
      else if (k == "--lead-ms") a.lead_ms = std::stoi(next());
      else if (k == "--observe") a.observe = true;
      else {
        std::cerr << "unknown option " << k << "\n";
        return 64;
      }
    } catch (const std::exception&) {
      std::cerr << "not a number for " << k << "\n";
      return 64;
    }
  }
  if (!a.observe && a.value.empty()) {
    std::cerr << "a candidate needs --value (or use --observe)\n";
    return 64;
  }
  asio::io_context io;
  int rc = 1;
  asio::co_spawn(io, run(a), [&](std::exception_ptr e, int r) {
    rc = r;
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        say(std::string("ERROR: ") + x.what());
      }
      rc = 2;
    }
  });
  io.run();
  return rc;
}
