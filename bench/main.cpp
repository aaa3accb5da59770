// mongolock-bench: every scenario of the benchmark in one run against one server, each next to
// its floor (the same commands through libmongoc directly) or peer (the seed article's
// algorithm). Prints a table; writes results.json and gnuplot data to --out.
//   mongolock-bench --uri URI --out DIR [--server-kind K] [--seconds S]
#include <mongoc/mongoc.h>

#include <boost/asio.hpp>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "common.hpp"
#include "election.hpp"
#include "handoff.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"

namespace asio = boost::asio;
using namespace bench;

namespace {

std::string machine() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2) + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
  return "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  bench::child_args child;
  bool is_child = false;
  int expiry_ms = 1000;  // scenario 7's candidates
  c.self = argv[0];
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (k == "--child") is_child = true;
    else if (k == "--uri") c.uri = child.uri = next();
    else if (k == "--out") c.out = child.out = next();
    else if (k == "--server-kind") c.kind = next();
    else if (k == "--only") c.only = next();
    else if (k == "--peer") c.peer = next();
    else if (k == "--seconds") c.seconds = child.seconds = std::stoi(next());
    else if (k == "--name") child.name = next();
    else if (k == "--collection") child.collection = next();
    else if (k == "--algo") child.algo = next();
    else if (k == "--workers") child.workers = std::stoi(next());
    else if (k == "--hold-ms") child.hold_ms = std::stoi(next());
    else if (k == "--think-ms") child.think_ms = std::stoi(next());
    else if (k == "--expiry-ms") expiry_ms = std::stoi(next());
    else { std::cerr << "unknown option " << k << "\n"; return 64; }
  }
  if (is_child) {
    mongoc_log_set_handler(nullptr, nullptr);
    mongoc_init();
    return child.algo == "leader" ? bench::run_leader_child(child, expiry_ms) : bench::run_child(child);
  }
  if (c.uri.empty()) { std::cerr << "usage: mongolock-bench --uri URI --out DIR\n"; return 64; }
  mongoc_log_set_handler(nullptr, nullptr);  // the driver's own log lines would garble the table
  mongoc_init();
  std::string version = run_io<std::string>(c, [](mongolock::client& db) -> asio::awaitable<std::string> {
    co_return (co_await db.async_server_version()).version;
  });
  std::cout << "server: " << c.kind << " " << version << "; machine: " << machine() << "\n";
  auto want = [&](char n) { return c.only.find(n) != std::string::npos; };
  warm_up(c);
  if (want('1')) scenario_uncontended(c);
  if (want('1') && !c.peer.empty()) peer_uncontended(c);
  if (want('2')) scenario_independent(c);
  if (want('3')) scenario_handoff(c);
  if (want('3')) scenario_local_handoff(c);
  if (want('4')) scenario_many_waiters(c);
  if (want('5')) scenario_many_leases(c);
  if (want('6')) scenario_multi_lock(c);
  if (want('7')) scenario_election(c);
  if (want('8')) scenario_readers(c);
  if (want('9')) scenario_http_load(c);
  if (want('f')) scenario_fence(c);
  std::ofstream json(c.out + "/results.json");
  json << "{\"server\":\"" << c.kind << " " << version << "\",\"machine\":\"" << machine() << "\",\"rows\":[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) json << rows[i].json() << (i + 1 < rows.size() ? ",\n" : "\n");
  json << "]}\n";
  return 0;
}
