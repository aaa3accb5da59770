// mongolock-soak: the supervisor (docs/design.md section 11). It puts a fault proxy (test/support)
// in front of the server, starts P worker processes (worker.cpp) on a few lock names, and until N
// acquisitions or S seconds: cycles the proxy's faults every 2 s (latency, held replies, held
// requests, resets, a short blackhole, and pass), and every 5 s either SIGKILLs a worker (and
// starts another) or SIGSTOPs one for 1-2 lease expiries. Worker 0 is never killed: its RSS,
// sampled every second, is the leak check. At the end it stops every worker, reads their journals
// and prints one verdict line; it exits 1 on any overlap, token regression, a leak (last RSS above
// 2 x first + 4 MiB) or a worker that failed by itself.
//
//   mongolock-soak --uri URI|--uri-file FILE [--acquisitions N] [--seconds S] [--processes P]
// [--names K]
//                  [--expiry-ms E] [--dir DIR] [--quiet] [--no-lock]
// --no-lock: the verdict's own test; workers enter the resource without the lock, and the run
// must then fail with overlaps (ctest integration.soak_checker expects exactly that).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "asan.hpp"
#include "fault_proxy.hpp"
#include "soak.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

namespace {

struct options {
  std::string uri, dir;
  long acquisitions = 1'000'000;
  int seconds = 0, processes = 4, names = 3, expiry_ms = 1000;
  bool quiet = false;
  bool no_lock = false;  // the checker's self-test: workers skip the lock, so it must report overlaps
};

// "mongodb://HOST:PORT/REST" -> HOST, PORT, "/REST" (the first host of a seed list).
struct endpoint {
  std::string host, rest;
  std::uint16_t port = 27017;
};
endpoint parse_endpoint(const std::string& uri) {
  const auto start = uri.find("://");
  if (start == std::string::npos) throw std::runtime_error("not a mongodb:// URI: " + uri);
  const auto hosts_end = uri.find_first_of("/?", start + 3);
  std::string hosts = uri.substr(start + 3, hosts_end == std::string::npos ? std::string::npos : hosts_end - start - 3);
  endpoint e;
  e.rest = hosts_end == std::string::npos ? "/" : uri.substr(hosts_end);
  hosts = hosts.substr(0, hosts.find(','));
  const auto colon = hosts.rfind(':');
  e.host = hosts.substr(0, colon);
  if (colon != std::string::npos) e.port = static_cast<std::uint16_t>(std::stoi(hosts.substr(colon + 1)));
  return e;
}

pid_t spawn(const options& o, const std::string& child_uri, const std::string& collection) {
  std::vector<std::string> args{"/proc/self/exe", "--child",   "--uri",       child_uri, "--dir",
                                      o.dir,            "--names",   std::to_string(o.names), "--expiry-ms",
                                      std::to_string(o.expiry_ms), "--collection", collection};
  if (o.no_lock) args.push_back("--no-lock");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

struct stats {
  long acquired = 0, lost = 0, errors = 0, refused = 0, overlaps = 0;
};
stats sum_stats(const std::string& dir) {
  stats s;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().filename().string().rfind("stats-", 0) != 0 || f.path().extension() == ".tmp") continue;
    std::ifstream in(f.path());
    stats one;
    in >> one.acquired >> one.lost >> one.errors >> one.refused >> one.overlaps;
    s.acquired += one.acquired, s.lost += one.lost, s.errors += one.errors, s.refused += one.refused;
    s.overlaps += one.overlaps;
  }
  return s;
}

// From the journals: overlaps, and token regressions (a token granted twice for a name, or a
// process's grants of one name not strictly increasing).
struct verdict {
  long grants = 0, overlaps = 0, regressions = 0, refused = 0, stale = 0;
  std::vector<std::string> examples;
};
verdict read_journals(const std::string& dir) {
  verdict v;
  std::map<std::string, std::set<long>> granted;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().filename().string().rfind("journal-", 0) != 0) continue;
    std::map<std::string, long> last;
    // A worker SIGKILLed inside write(2) may leave its last line torn (a write crossing a page
    // boundary stops there): only lines that end in a newline count.
    std::stringstream whole;
    whole << std::ifstream(f.path()).rdbuf();
    std::string text = whole.str();
    text.erase(text.find_last_of('\n') == std::string::npos ? 0 : text.find_last_of('\n') + 1);
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      std::istringstream ls(line);
      std::string kind, name;
      long token = 0;
      ls >> kind >> name >> token;
      if (kind == "G") {
        ++v.grants;
        const bool fresh = granted[name].insert(token).second;
        const bool rising = token > last[name];
        last[name] = token;
        if (fresh && rising) continue;
        ++v.regressions;
      } else if (kind == "O") {
        ++v.overlaps;
      } else if (kind == "R") {
        ++v.refused;
        continue;
      } else if (kind == "S") {
        ++v.stale;
        continue;
      }
      if (v.examples.size() < 5) v.examples.push_back(f.path().filename().string() + ": " + line);
    }
  }
  return v;
}

int supervise(options o) {
  if (o.dir.empty()) o.dir = (fs::temp_directory_path() / ("mongolock-soak-" + std::to_string(::getpid()))).string();
  fs::remove_all(o.dir);  // journals and resource files of an earlier run would judge this one
  fs::create_directories(o.dir);
  const auto up = parse_endpoint(o.uri);
  test::fault_proxy proxy(up.host, up.port);
  const std::string child_uri = "mongodb://127.0.0.1:" + std::to_string(proxy.port()) + up.rest;
  const std::string collection = "soak" + std::to_string(::getpid());
  std::mt19937 rng(std::random_device{}());
  auto pick = [&](int from, int to) { return std::uniform_int_distribution<int>(from, to)(rng); };

  std::vector<pid_t> workers;
  for (int i = 0; i < o.processes; ++i) workers.push_back(spawn(o, child_uri, collection));
  const auto start = steady::now();
  auto next_fault = start + 2s, next_chaos = start + 5s, next_sample = start + 1s;
  constexpr auto never = steady::time_point::max();  // (not std::optional: GCC 12 -O2 warns falsely)
  steady::time_point heal_at = never, resume_at = never;
  pid_t paused = 0;
  long kills = 0, pauses = 0, faults = 0, rss_first = 0, rss_last = 0, failed = 0;
  const auto warm_up = o.seconds > 0 ? std::chrono::seconds(std::min(10, o.seconds / 5 + 1)) : 10s;
  stats s;
  bool chaos_kill = true;
  for (;;) {
    std::this_thread::sleep_for(50ms);
    const auto now = steady::now();
    s = sum_stats(o.dir);
    if (o.seconds > 0 ? now - start >= std::chrono::seconds(o.seconds) : s.acquired >= o.acquisitions) break;
    // A worker that exits on its own (not killed by us) has failed.
    for (auto& w : workers) {
      int status = 0;
      if (::waitpid(w, &status, WNOHANG) == w) {
        ++failed;
        std::cerr << "soak: worker " << w << " exited by itself (status " << status << ")\n";
        w = spawn(o, child_uri, collection);
      }
    }
    if (now >= heal_at) proxy.pass(), heal_at = never;
    if (now >= next_fault) {
      next_fault = now + 2s;
      ++faults;
      switch (pick(0, 8)) {
        case 0: proxy.latency(std::chrono::milliseconds(pick(5, 30))); break;
        case 1: proxy.hold_replies(std::chrono::milliseconds(pick(200, 600))); break;
        case 2: proxy.hold_requests(std::chrono::milliseconds(pick(200, 600))); break;
        case 3: proxy.reset(); break;
        case 4: proxy.blackhole(), heal_at = now + 300ms; break;
        default: proxy.pass(), --faults; break;
      }
    }
    if (now >= resume_at) ::kill(paused, SIGCONT), resume_at = never;
    if (now >= next_chaos && resume_at == never) {
      next_chaos = now + 5s;
      if (chaos_kill && o.processes > 1) {
        auto& victim = workers[static_cast<std::size_t>(pick(1, o.processes - 1))];
        ::kill(victim, SIGKILL);
        ::waitpid(victim, nullptr, 0);
        victim = spawn(o, child_uri, collection);
        ++kills;
      } else {
        paused = workers[static_cast<std::size_t>(pick(0, o.processes - 1))];
        ::kill(paused, SIGSTOP);
        resume_at = now + std::chrono::milliseconds(o.expiry_ms * pick(10, 20) / 10);
        ++pauses;
      }
      chaos_kill = !chaos_kill;
    }
    if (now >= next_sample) {
      next_sample = now + 1s;
      rss_last = rss_kib(workers[0]);
      if (!rss_first && now - start >= warm_up) rss_first = rss_last;
      if (!o.quiet)
        std::cerr << "soak: " << std::chrono::duration_cast<std::chrono::seconds>(now - start).count() << " s, "
                  << s.acquired << " acquisitions, " << s.errors << " errors, rss " << rss_last << " KiB\n";
    }
  }
  proxy.pass();
  for (auto w : workers) ::kill(w, SIGCONT), ::kill(w, SIGTERM);
  const auto stop_by = steady::now() + 15s;
  for (auto w : workers) {
    int status = 0;
    while (::waitpid(w, &status, WNOHANG) == 0 && steady::now() < stop_by) std::this_thread::sleep_for(20ms);
    if (steady::now() >= stop_by) ::kill(w, SIGKILL), ::waitpid(w, &status, 0), ++failed;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  s = sum_stats(o.dir);
  const auto v = read_journals(o.dir);
#if MONGOLOCK_TEST_ASAN
  // ASan's quarantine keeps freed memory for a while, so RSS grows by design; its leak check at
  // each worker's exit (a non-zero status: "workers failed") replaces this one.
  const bool leak = false;
#else
  const bool leak = rss_first > 0 && rss_last > 2 * rss_first + 4096;
#endif
  // Entries with a deadline already past are rare (a pause between grant and entry); many mean
  // the deadline reading is broken, and with it the overlap check.
  const bool blind = v.stale > v.grants / 100 + 10;
  if (blind) std::cout << "  " << v.stale << " of " << v.grants << " entries had a past deadline: overlap check blind\n";
  for (const auto& e : v.examples) std::cout << "  " << e << "\n";
  std::cout << "soak: " << v.grants << " acquisitions, " << v.overlaps << " overlaps, " << v.regressions
            << " token regressions, rss first/last " << rss_first << "/" << rss_last << " KiB (" << o.processes
            << " processes, " << o.names << " names, "
            << std::chrono::duration_cast<std::chrono::seconds>(steady::now() - start).count() << " s, " << faults
            << " faults, " << kills << " kills, " << pauses << " pauses, " << v.refused << " late holders fenced off, "
            << s.lost << " leases lost, " << s.errors << " failed acquires, " << failed << " workers failed)"
            << std::endl;
  return v.overlaps == 0 && v.regressions == 0 && !leak && !blind && failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  soak::worker_args w;
  bool child = false;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value for " + k);
      return argv[++i];
    };
    try {
      if (k == "--child") child = true;
      else if (k == "--uri") o.uri = w.uri = next();
      else if (k == "--uri-file") std::getline(std::ifstream(next()), o.uri);  // ctest: the fixture's server
      else if (k == "--dir") o.dir = w.dir = next();
      else if (k == "--collection") w.collection = next();
      else if (k == "--names") o.names = w.names = std::stoi(next());
      else if (k == "--expiry-ms") o.expiry_ms = std::stoi(next()), w.expiry = std::chrono::milliseconds(o.expiry_ms);
      else if (k == "--acquisitions") o.acquisitions = std::stol(next());
      else if (k == "--seconds") o.seconds = std::stoi(next());
      else if (k == "--processes") o.processes = std::stoi(next());
      else if (k == "--quiet") o.quiet = true;
      else if (k == "--no-lock") o.no_lock = w.no_lock = true;
      else throw std::invalid_argument("unknown option " + k);
    } catch (const std::exception& e) {
      std::cerr << "mongolock-soak: " << e.what() << "\n";
      return 64;
    }
  }
  if (o.uri.empty() || o.processes < 1 || o.names < 1) {
    std::cerr << "usage: mongolock-soak --uri URI [--acquisitions N] [--seconds S] [--processes P] [--names K]\n";
    return 64;
  }
  if (child) return soak::run_worker(w);
  return supervise(o);
}
