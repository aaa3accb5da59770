#include "election.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "mongolock.hpp"
#include "spawn.hpp"
#include "stats.hpp"

namespace bench {

namespace asio = boost::asio;
using namespace std::chrono_literals;

int run_leader_child(const child_args& a, int expiry_ms) {
  asio::io_context io;
  mongolock::client db(io.get_executor(), a.uri);
  mongolock::lock_options o;
  o.expiry = std::chrono::milliseconds(expiry_ms);
  mongolock::provider locks(db, "mongolock_bench", a.collection, o);
  auto el = locks.create_election(a.name);
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    auto lead = co_await el.candidate("pid " + std::to_string(::getpid())).async_acquire();
    std::ofstream(a.out, std::ios::app) << "LEADER " << now_ns() << ' ' << lead.term() << std::endl;
    co_await lead.async_wait_lost();  // leads until killed
  }, asio::detached);
  io.run();
  return 0;
}

namespace {

struct candidate {
  pid_t pid;
  std::string out;
};

candidate start(const std::string& self, const std::string& uri, const std::string& name, const std::string& coll,
                const std::string& out, int expiry_ms) {
  std::vector<std::string> args{self, "--child", "--algo", "leader", "--uri", uri, "--name", name,
                                "--collection", coll, "--expiry-ms", std::to_string(expiry_ms), "--out", out};
  std::remove(out.c_str());  // the child appends: a file left by an earlier run would read as a win
  return {spawn(std::move(args)), out};
}

// (win time, term) of a candidate that has won, if it has.
bool won(const candidate& c, std::int64_t& at, std::int64_t& term) {
  std::ifstream in(c.out);
  std::string word;
  return static_cast<bool>(in >> word >> at >> term) && word == "LEADER";
}

}  // namespace

failover_result election_failover(const std::string& self, const std::string& uri, const std::string& out_dir,
                                  int candidates, int rounds, int expiry_ms) {
  const auto name = "election-" + std::to_string(::getpid()) + "-" + std::to_string(now_ns() % 100000);
  const auto coll = "election_" + std::to_string(::getpid());
  int started = 0;
  auto next_out = [&] { return out_dir + "/candidate-" + std::to_string(started++) + ".txt"; };
  std::vector<candidate> kids;
  for (int i = 0; i < candidates; ++i) kids.push_back(start(self, uri, name, coll, next_out(), expiry_ms));
  failover_result r;
  std::int64_t killed_at = 0, killed_term = 0;
  for (int round = 0; round <= rounds; ++round) {
    // Wait (up to 10 expiries) for a leader among the running candidates.
    std::size_t leader = kids.size();
    std::int64_t at = 0, term = 0;
    for (const auto deadline = now_ns() + 10'000'000LL * expiry_ms; leader == kids.size() && now_ns() < deadline;) {
      for (std::size_t i = 0; i < kids.size(); ++i)
        if (won(kids[i], at, term)) leader = i;
      if (leader == kids.size()) std::this_thread::sleep_for(2ms);
    }
    if (leader == kids.size()) break;  // nobody won: reported as fewer rounds
    if (round > 0) {
      r.failover_ms.push_back((at - killed_at) / 1e6);
      r.terms_gap.push_back(static_cast<double>(term - killed_term));
    }
    if (round == rounds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(expiry_ms / 2));  // it leads a while
    ::kill(kids[leader].pid, SIGKILL);
    killed_at = now_ns();
    killed_term = term;
    ::waitpid(kids[leader].pid, nullptr, 0);
    kids[leader] = start(self, uri, name, coll, next_out(), expiry_ms);  // always `candidates` running
  }
  for (auto& k : kids) {
    ::kill(k.pid, SIGKILL);
    ::waitpid(k.pid, nullptr, 0);
  }
  return r;
}

}  // namespace bench
