// mongolock-bench: every scenario of the benchmark in one run against one server, each next to
// its floor (the same commands through libmongoc directly) or peer (the seed article's
// algorithm). Prints a table; writes results.json and gnuplot data to --out.
//   mongolock-bench --uri URI --out DIR [--server-kind K] [--seconds S]
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "direct.hpp"
#include "election.hpp"
#include "handoff.hpp"
#include "hop.hpp"
#include "spawn.hpp"
#include "mongolock.hpp"
#include "stats.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using bench::row;

namespace {

struct config {
  std::string uri, out = ".", kind = "unknown", self;
  std::string only = "12345678";  // which scenarios to run
  std::string peer;            // built DistributedLock.MongoDB harness (a .dll run with dotnet), if any
  int seconds = 3;
};

std::vector<row> rows;

void print(const row& r) {
  std::cout << "  " << r.scenario;
  for (auto& [k, v] : r.fields) std::cout << "  " << k << "=" << v;
  std::cout << std::endl;
  rows.push_back(r);
}

std::string unique(const std::string& p) { return p + "-" + std::to_string(::getpid()) + "-" + std::to_string(bench::now_ns() % 100000); }

// Every measurement gets a collection of its own. On the jongodb emulator an update costs time
// proportional to the collection's size (0.8 ms at 100 documents, 17 ms at 1,100, 436 ms at
// 6,100), so a shared, growing collection would measure the emulator, not the lock. On MongoDB
// (an _id index) it makes no difference.
std::string fresh_collection(const std::string& label) {
  static int n = 0;
  return label + "_" + std::to_string(::getpid()) + "_" + std::to_string(++n);
}

// Runs fn on an io_context with one thread (as a typical server would), returns its result.
template <class T>
T run_io(const config& c, std::function<asio::awaitable<T>(mongolock::client&)> fn) {
  asio::io_context io;
  mongolock::client db(io.get_executor(), c.uri);
  auto f = asio::co_spawn(io, fn(db), asio::use_future);
  io.run();
  return f.get();
}

// Polls every 10 ms until `n` (coroutines still running) reaches zero.
asio::awaitable<void> until_zero(const std::atomic<int>& n) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  while (n > 0) {
    t.expires_after(10ms);
    co_await t.async_wait(asio::deferred);
  }
}

// ---- Scenario 1 and 2: cycles of acquire + release on independent locks -------------------

double library_cycles(const config& c, int k, std::vector<double>* latencies) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("cycle"));
    const auto base = unique("cycle");
    std::atomic<long> cycles{0};
    std::atomic<int> running{k};
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; i < k; ++i) {
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        auto lock = locks.create_lock(base + "-" + std::to_string(i));
        while (std::chrono::steady_clock::now() < end) {
          const auto t0 = bench::now_ns();
          auto l = co_await lock.async_acquire();
          co_await l.async_release();
          if (latencies) latencies->push_back((bench::now_ns() - t0) / 1e3);
          ++cycles;
        }
        --running;
      }, asio::detached);
    }
    co_await until_zero(running);
    co_return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

// The floor: the same two commands per cycle from plain threads, min(k, 4) of them (the library's
// worker pool has 4 threads), each cycling its share of the k locks.
double floor_cycles(const config& c, int k, std::vector<double>* latencies) {
  const int threads = std::min(k, 4);
  std::atomic<long> cycles{0};
  std::mutex mu;
  const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
  const auto base = unique("floor");
  const auto coll = fresh_collection("floor");
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      bench::direct_conn conn(c.uri, "mongolock_bench", coll);
      std::vector<std::string> names;
      std::vector<std::int64_t> tokens;
      for (int i = t; i < k; i += threads) {
        names.push_back(base + "-" + std::to_string(i));
        tokens.push_back(0);
        bench::insert_free(conn, names.back());
      }
      const std::string owner = "0123456789abcdef0123456789abcdef";
      std::vector<double> mine;
      while (std::chrono::steady_clock::now() < end) {
        for (std::size_t i = 0; i < names.size(); ++i) {
          const auto t0 = bench::now_ns();
          if (!bench::floor_cycle(conn, names[i], tokens[i], owner)) return;
          if (latencies) mine.push_back((bench::now_ns() - t0) / 1e3);
          ++cycles;
        }
      }
      std::lock_guard g(mu);
      if (latencies) latencies->insert(latencies->end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : pool) t.join();
  return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double seed_cycles(const config& c, std::vector<double>* latencies) {
  bench::direct_conn conn(c.uri, "mongolock_bench", fresh_collection("seed"));
  const auto name = unique("seed-cycle");
  long cycles = 0;
  const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
  while (std::chrono::steady_clock::now() < end) {
    const auto t0 = bench::now_ns();
    if (!bench::seed_try_acquire(conn, name, "me")) break;
    bench::seed_release(conn, name, "me");
    latencies->push_back((bench::now_ns() - t0) / 1e3);
    ++cycles;
  }
  return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// DistributedLock.MongoDB's uncontended cycle, from its harness's one-line report.
void peer_uncontended(const config& c) {
  const std::string cmd = "dotnet '" + c.peer + "' cycle '" + c.uri + "' " + std::to_string(c.seconds);
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[256] = {};
  if (!p || !std::fgets(buf, sizeof buf, p)) {
    if (p) ::pclose(p);
    std::cout << "  (DistributedLock.MongoDB harness gave no result)\n";
    return;
  }
  ::pclose(p);
  std::istringstream in(buf);
  std::string k1, k2, k3;
  double per_s = 0, median = 0, p99 = 0;
  in >> k1 >> per_s >> k2 >> median >> k3 >> p99;
  print(row{"1 uncontended DistributedLock.MongoDB"}.num("per_s", per_s).num("median_us", median).num("p99_us", p99));
}

// Library and floor alternate, `rounds` times each, and the medians are compared: the server's
// own drift (warm-up, garbage collection in the emulator) then hits both sides alike.
struct paired {
  std::vector<double> lib, floor;
  double lib_median() const { return bench::percentile(lib, .5); }
  double floor_median() const { return bench::percentile(floor, .5); }
};
constexpr int rounds = 3;

void scenario_uncontended(const config& c) {
  paired rate;
  std::vector<double> lib_lat, floor_lat, seed_lat;
  for (int r = 0; r < rounds; ++r) {
    rate.lib.push_back(library_cycles(c, 1, &lib_lat));
    rate.floor.push_back(floor_cycles(c, 1, &floor_lat));
  }
  const double seed = seed_cycles(c, &seed_lat);
  // The breakdown: a cycle is two commands, each a blocking driver call the library must run on
  // a worker and complete on the caller's io_context; the floor calls the driver in a loop. So
  // at best the library's median is the floor's plus two bare round trips.
  const double floor_us = bench::percentile(floor_lat, .5);
  const double hop = bench::percentile(bench::bare_hops(10000, floor_us / 2), .5);
  print(row{"1 uncontended cycle"}
            .num("mongolock_per_s", rate.lib_median()).num("floor_per_s", rate.floor_median())
            .num("ratio_to_floor", rate.lib_median() / rate.floor_median())
            .num("seed_per_s", seed).num("ratio_to_seed", rate.lib_median() / seed)
            .num("mongolock_median_us", bench::percentile(lib_lat, .5)).num("mongolock_p99_us", bench::percentile(lib_lat, .99))
            .num("floor_median_us", bench::percentile(floor_lat, .5)).num("floor_p99_us", bench::percentile(floor_lat, .99))
            .num("seed_median_us", bench::percentile(seed_lat, .5))
            .num("bare_hop_median_us", hop).num("ceiling_ratio", floor_us / (floor_us + 2 * hop)));
}

void scenario_independent(const config& c) {
  std::ofstream dat(c.out + "/independent.dat");
  dat << "# k mongolock_per_s floor_per_s\n";
  for (int k : {1, 8, 64, 512}) {
    paired rate;
    for (int r = 0; r < rounds; ++r) {
      rate.lib.push_back(library_cycles(c, k, nullptr));
      rate.floor.push_back(floor_cycles(c, k, nullptr));
    }
    dat << k << ' ' << rate.lib_median() << ' ' << rate.floor_median() << '\n';
    print(row{"2 independent locks"}.num("k", k).num("mongolock_per_s", rate.lib_median())
              .num("floor_per_s", rate.floor_median()).num("ratio_to_floor", rate.lib_median() / rate.floor_median()));
  }
}

// ---- Scenario 6: a multi-lock of n names against n single locks and the floor -----------------

// Cycles per second of taking `n` names and releasing them: as one multi_lock, or (`multi` false)
// as n single locks acquired one after another and released one after another.
double library_sets(const config& c, int n, bool multi) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("set"));
    const auto base = unique("set");
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) names.push_back(base + "-" + std::to_string(i));
    auto set = locks.create_multi_lock(names);
    long cycles = 0;
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (multi) {
        auto held = co_await set.async_acquire();
        co_await held.async_release();
      } else {
        std::vector<mongolock::lease> held;
        for (const auto& name : names) {
          auto lock = locks.create_lock(name);  // named: no temporaries inside co_await (GCC 12)
          held.push_back(co_await lock.async_acquire());
        }
        for (auto& l : held) co_await l.async_release();
      }
      ++cycles;
    }
    co_return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

// The floor: the same 2n commands, one after another, from one thread.
double floor_sets(const config& c, int n) {
  bench::direct_conn conn(c.uri, "mongolock_bench", fresh_collection("floorset"));
  const auto base = unique("floorset");
  std::vector<std::string> names;
  std::vector<std::int64_t> tokens(n, 0);
  for (int i = 0; i < n; ++i) names.push_back(base + "-" + std::to_string(i));
  for (const auto& name : names) bench::insert_free(conn, name);
  const std::string owner = "0123456789abcdef0123456789abcdef";
  long cycles = 0;
  const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < n; ++i)
      if (!bench::floor_cycle(conn, names[i], tokens[i], owner)) return 0;
    ++cycles;
  }
  return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void scenario_multi_lock(const config& c) {
  const int n = 4;
  paired multi, single;
  for (int r = 0; r < rounds; ++r) {
    multi.lib.push_back(library_sets(c, n, true));
    single.lib.push_back(library_sets(c, n, false));
    multi.floor.push_back(floor_sets(c, n));
  }
  print(row{"6 multi-lock"}.num("names", n).num("multi_per_s", multi.lib_median())
            .num("single_locks_per_s", single.lib_median()).num("floor_per_s", multi.floor_median())
            .num("ratio_to_floor", multi.lib_median() / multi.floor_median())
            .num("ratio_to_single_locks", multi.lib_median() / single.lib_median()));
}

// ---- Scenario 7: leader election failover after SIGKILL ----------------------------------------

void scenario_election(const config& c) {
  const int expiry_ms = 1000, margin_ms = 100, renew_ms = 333;  // lock_options defaults for a 1 s expiry
  auto r = bench::election_failover(c.self, c.uri, c.out, 3, 8, expiry_ms);
  // Waiting candidates count the dead leader's silence from its last renewal, up to renew_every
  // before the kill: a new leader is due between E + m - renew_every and E + m after the kill,
  // plus the first in line's polling and the campaign's two commands.
  print(row{"7 election failover"}.num("candidates", 3).num("kills", static_cast<double>(r.failover_ms.size()))
            .num("expiry_ms", expiry_ms).num("failover_median_ms", bench::percentile(r.failover_ms, .5))
            .num("failover_max_ms", r.failover_ms.empty() ? 0 : *std::max_element(r.failover_ms.begin(), r.failover_ms.end()))
            .num("window_min_ms", expiry_ms + margin_ms - renew_ms).num("window_max_ms", expiry_ms + margin_ms)
            .num("ratio_median_to_window_max", bench::percentile(r.failover_ms, .5) / (expiry_ms + margin_ms))
            .num("max_term_gap", r.terms_gap.empty() ? 0 : *std::max_element(r.terms_gap.begin(), r.terms_gap.end())));
}

// ---- Scenario 8: readers of a rw_lock against a mutex ----------------------------------------

// Critical sections per second of k coroutines (one provider, one thread) that each take the
// lock, hold it for `hold` and release it: as readers of one rw_lock (16 read permits, the
// default), or all on one lock.
double sections(const config& c, int k, std::chrono::milliseconds hold, bool readers) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("rw"));
    const auto name = unique("rw");
    auto rw = locks.create_rw_lock(name);
    auto mutex = locks.create_lock(name);
    std::atomic<long> done{0};
    std::atomic<int> running{k};
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; i < k; ++i) {
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        asio::steady_timer t(ex);
        while (std::chrono::steady_clock::now() < end) {
          mongolock::lease held;
          if (readers) held = co_await rw.async_acquire_read();
          else held = co_await mutex.async_acquire();
          t.expires_after(hold);
          co_await t.async_wait(asio::deferred);
          co_await held.async_release();
          ++done;
        }
        --running;
      }, asio::detached);
    }
    co_await until_zero(running);
    co_return done / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

// Uncontended acquire + release cycles per second: the write lock (NAME#w and 16 permits) or one lock.
double write_cycles(const config& c, bool writer) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("rww"));
    const auto name = unique("rww");
    auto rw = locks.create_rw_lock(name);
    auto mutex = locks.create_lock(name);
    long cycles = 0;
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (writer) {
        auto held = co_await rw.async_acquire_write();
        co_await held.async_release();
      } else {
        auto held = co_await mutex.async_acquire();
        co_await held.async_release();
      }
      ++cycles;
    }
    co_return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

void scenario_readers(const config& c) {
  const int k = 8;
  const auto hold = 20ms;
  std::vector<double> read, mutex, write, lock;
  for (int r = 0; r < rounds; ++r) {
    read.push_back(sections(c, k, hold, true));
    mutex.push_back(sections(c, k, hold, false));
    write.push_back(write_cycles(c, true));
    lock.push_back(write_cycles(c, false));
  }
  const auto m = [](const std::vector<double>& v) { return bench::percentile(v, .5); };
  // Ideal: k sections in parallel against one at a time, so k times the mutex.
  print(row{"8 rw_lock readers"}.num("readers", k).num("hold_ms", static_cast<double>(hold.count()))
            .num("read_sections_per_s", m(read)).num("mutex_sections_per_s", m(mutex))
            .num("ratio_to_mutex", m(read) / m(mutex)).num("ideal_ratio", k)
            .num("write_cycles_per_s", m(write)).num("lock_cycles_per_s", m(lock))
            .num("write_ratio_to_lock", m(write) / m(lock)));
}

// Untimed: the first seconds of a fresh server are slower (measured: up to 2x on jongodb).
void warm_up(const config& c) {
  config quick = c;
  quick.seconds = 2;
  library_cycles(quick, 8, nullptr);
  floor_cycles(quick, 8, nullptr);
}

// ---- Scenario 3: hand-off between processes ---------------------------------------------------

struct handoff_result {
  std::vector<double> handoff_ms;     // release -> next acquisition, whoever it is
  std::vector<double> to_other_ms;    // release -> acquisition by a DIFFERENT waiter
  std::vector<double> wait_ms;        // request -> grant, per acquisition
  double commands_per_s = 0;
  long acquisitions = 0, min_per_worker = 0, max_per_worker = 0;
};

handoff_result handoff(const config& c, const std::string& algo, int processes, int workers, int hold_ms,
                       int think_ms, int seconds) {
  const auto name = unique("handoff-" + algo);
  const auto coll = fresh_collection("handoff");
  std::vector<pid_t> kids;
  std::vector<std::string> files;
  for (int p = 0; p < processes; ++p) {
    files.push_back(c.out + "/handoff-" + algo + "-" + std::to_string(p) + ".txt");
    std::vector<std::string> args{c.self, "--child", "--uri", c.uri, "--name", name, "--collection", coll,
                                  "--algo", algo, "--workers",
                                  std::to_string(workers), "--hold-ms", std::to_string(hold_ms), "--think-ms",
                                  std::to_string(think_ms), "--seconds",
                                  std::to_string(seconds), "--out", files.back()};
    if (algo == "distributedlock")
      args = {"/usr/bin/env", "dotnet", c.peer, "child", c.uri, coll, name, std::to_string(workers),
              std::to_string(hold_ms), std::to_string(think_ms), std::to_string(seconds), files.back()};
    kids.push_back(bench::spawn(std::move(args)));
  }
  for (pid_t k : kids) ::waitpid(k, nullptr, 0);
  std::vector<std::tuple<std::int64_t, std::int64_t, std::string>> all;
  std::map<std::string, long> per_worker;
  double commands = 0;
  handoff_result r;
  for (auto& f : files) {
    std::ifstream in(f);
    std::string a, b, w, x;
    while (in >> a >> b) {
      if (a == "commands") { commands += std::stod(b); continue; }
      in >> x >> w;  // requested acquired released worker
      all.emplace_back(std::stoll(b), std::stoll(x), w);
      r.wait_ms.push_back((std::stoll(b) - std::stoll(a)) / 1e6);
      ++per_worker[w];
    }
  }
  std::sort(all.begin(), all.end());
  for (std::size_t i = 1; i < all.size(); ++i) {
    const double ms = (std::get<0>(all[i]) - std::get<1>(all[i - 1])) / 1e6;
    r.handoff_ms.push_back(ms);
    if (std::get<2>(all[i]) != std::get<2>(all[i - 1])) r.to_other_ms.push_back(ms);
  }
  r.commands_per_s = commands / seconds;
  r.acquisitions = static_cast<long>(all.size());
  r.min_per_worker = per_worker.size() == static_cast<std::size_t>(processes * workers) && !per_worker.empty()
                         ? std::min_element(per_worker.begin(), per_worker.end(), [](auto& x, auto& y) { return x.second < y.second; })->second
                         : 0;  // a waiter that never got the lock counts as 0
  for (auto& [_, n] : per_worker) r.max_per_worker = std::max(r.max_per_worker, n);
  return r;
}

void scenario_handoff(const config& c) {
  const int processes = 2, workers = 4, hold_ms = 10, seconds = std::max(c.seconds * 2, 4);
  std::vector<std::string> algos{"mongolock", "seed", "dlreimpl"};
  if (!c.peer.empty()) algos.push_back("distributedlock");
  for (const int think_ms : {20, 0}) {
    for (const auto& algo : algos) {
      auto r = handoff(c, algo, processes, workers, hold_ms, think_ms, seconds);
      if (think_ms == 20) {
        std::ofstream dat(c.out + "/handoff-" + algo + ".dat");
        auto sorted = r.to_other_ms;  // the plot shows real hand-offs: to another waiter
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < sorted.size(); ++i) dat << sorted[i] << ' ' << (i + 1.0) / sorted.size() << '\n';
      }
      // The FIFO ideal of the longest wait: every other waiter holds once, with a median hand-off each.
      const double fifo_ms = processes * workers * (hold_ms + bench::percentile(r.handoff_ms, .5));
      const double max_wait = r.wait_ms.empty() ? 0 : *std::max_element(r.wait_ms.begin(), r.wait_ms.end());
      print(row{"3 hand-off " + algo}
                .num("processes", processes).num("workers_each", workers).num("hold_ms", hold_ms).num("think_ms", think_ms)
                .num("acquisitions", r.acquisitions).num("handoff_median_ms", bench::percentile(r.handoff_ms, .5))
                .num("handoff_p99_ms", bench::percentile(r.handoff_ms, .99))
                .num("to_other_count", static_cast<double>(r.to_other_ms.size()))
                .num("wait_p50_ms", bench::percentile(r.wait_ms, .5)).num("wait_p99_ms", bench::percentile(r.wait_ms, .99))
                .num("wait_max_ms", max_wait).num("fifo_ideal_max_wait_ms", fifo_ms)
                .num("commands_per_s", r.commands_per_s)
                .num("commands_per_acquisition", r.acquisitions ? r.commands_per_s * seconds / r.acquisitions : 0)
                .num("per_waiter_min", r.min_per_worker).num("per_waiter_max", r.max_per_worker));
    }
  }
}

// Two coroutines of one provider passing one lock back and forth: each release finds the other
// parked and hands the lock over in one update (docs/design.md section 7).
void scenario_local_handoff(const config& c) {
  run_io<int>(c, [&](mongolock::client& db) -> asio::awaitable<int> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("local"));
    const auto name = unique("local");
    auto ex = co_await asio::this_coro::executor;
    std::atomic<long> handoffs{0};
    std::atomic<int> running{2};
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(c.seconds);
    std::uint64_t calls0 = 0;
    {
      auto first = co_await locks.create_lock(name).async_acquire();  // the document exists from here on
      co_await first.async_release();
      calls0 = locks.snapshot().server_calls;
    }
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 2; ++i) {
      asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto lock = locks.create_lock(name);
        while (std::chrono::steady_clock::now() < end) {
          auto l = co_await lock.async_acquire();
          ++handoffs;
          co_await l.async_release();
        }
        --running;
      }, asio::detached);
    }
    co_await until_zero(running);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double commands = static_cast<double>(locks.snapshot().server_calls - calls0);
    print(row{"3b local hand-off"}.num("acquisitions_per_s", handoffs / secs)
              .num("commands_per_acquisition", handoffs ? commands / handoffs : 0));
    co_return 0;
  });
}

// ---- Scenarios 4 and 5: many waiters, many held leases ----------------------------------------

void scenario_many_waiters(const config& c) {
  const int locks_n = 100, waiters = 10000;
  run_io<int>(c, [&](mongolock::client& db) -> asio::awaitable<int> {
    const auto coll = fresh_collection("waiters");
    mongolock::provider holder(db, "mongolock_bench", coll), waiting(db, "mongolock_bench", coll);
    const auto base = unique("waiters");
    std::vector<mongolock::lease> held;
    for (int i = 0; i < locks_n; ++i) held.push_back(co_await holder.create_lock(base + std::to_string(i)).async_acquire());
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer t(ex);
    t.expires_after(200ms);
    co_await t.async_wait(asio::deferred);
    const long rss0 = bench::rss_kib();
    std::vector<asio::cancellation_signal> stop(waiters);
    std::atomic<int> ended{0};
    for (int i = 0; i < waiters; ++i)
      waiting.create_lock(base + std::to_string(i % locks_n))
          .async_acquire(asio::bind_cancellation_slot(stop[i].slot(), [&](boost::system::error_code, mongolock::lease) { ++ended; }));
    t.expires_after(2s);  // let every waiter reach its backoff rhythm
    co_await t.async_wait(asio::deferred);
    const long rss1 = bench::rss_kib();
    const auto calls0 = waiting.snapshot().server_calls;
    const auto t0 = std::chrono::steady_clock::now();
    t.expires_after(std::chrono::seconds(c.seconds));
    co_await t.async_wait(asio::deferred);
    const double rate = (waiting.snapshot().server_calls - calls0) /
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto& s : stop) s.emit(asio::cancellation_type::terminal);
    while (ended < waiters) {
      t.expires_after(10ms);
      co_await t.async_wait(asio::deferred);
    }
    co_await holder.async_release_all();
    print(row{"4 many waiters"}.num("waiters", waiters).num("locks", locks_n)
              .num("rss_bytes_per_waiter", (rss1 - rss0) * 1024.0 / waiters).num("commands_per_s", rate));
    co_return 0;
  });
}

void scenario_many_leases(const config& c) {
  const int leases = 1000, collections = 10;  // 100 per collection: see fresh_collection()
  run_io<int>(c, [&](mongolock::client& db) -> asio::awaitable<int> {
    mongolock::lock_options o;
    o.expiry = 30s;  // the default: renewal every 10 s
    std::vector<std::unique_ptr<mongolock::provider>> providers;
    for (int i = 0; i < collections; ++i)
      providers.push_back(std::make_unique<mongolock::provider>(db, "mongolock_bench", fresh_collection("leases"), o));
    auto calls = [&] {
      std::uint64_t n = 0;
      for (auto& p : providers) n += p->snapshot().server_calls;
      return n;
    };
    const auto base = unique("leases");
    std::vector<mongolock::lease> held;
    for (int i = 0; i < leases; ++i)
      held.push_back(co_await providers[i % collections]->create_lock(base + std::to_string(i)).async_acquire());
    // Measure one full renewal period (plus a second) once all leases are held.
    const auto calls0 = calls();
    const auto t0 = std::chrono::steady_clock::now();
    asio::steady_timer t(co_await asio::this_coro::executor, o.effective_renew_every() + 1s);
    co_await t.async_wait(asio::deferred);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = (calls() - calls0) / secs;
    std::size_t lost = 0;
    for (auto& l : held) lost += !l.held();
    for (auto& p : providers) co_await p->async_release_all();
    print(row{"5 many held leases"}.num("leases", leases).num("expiry_ms", 30000)
              .num("renewal_commands_per_s", rate).num("per_lease_per_s", rate / leases)
              .num("one_per_lease_per_s", leases / 10.0).num("lost", static_cast<double>(lost)));
    co_return 0;
  });
}

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
  std::ofstream json(c.out + "/results.json");
  json << "{\"server\":\"" << c.kind << " " << version << "\",\"machine\":\"" << machine() << "\",\"rows\":[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) json << rows[i].json() << (i + 1 < rows.size() ? ",\n" : "\n");
  json << "]}\n";
  return 0;
}
