// ---- Scenario 1 and 2: cycles of acquire + release on independent locks -------------------
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "direct.hpp"
#include "hop.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace bench {

namespace {

// `commands`, if given: the server commands per cycle (stats::server_calls, a grouped command once).
double library_cycles(const config& c, int k, std::vector<double>* latencies, double* commands = nullptr) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("cycle"));
    const auto base = unique("cycle");
    std::atomic<long> cycles{0};
    std::atomic<int> running{k};
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    constexpr auto grace = std::chrono::seconds(30);
    auto ex = co_await asio::this_coro::executor;
    std::atomic<int> failed{0};
    std::string first_failure;
    for (int i = 0; i < k; ++i) {
      asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
        // A failed acquire or release ends this coroutine's cycles and is reported below: a
        // detached coroutine's exception would otherwise vanish, and the wait for it never end.
        // An acquire gets until `grace` after the run's end: a server that cannot serve k names'
        // first acquires in that time (k = 512 on jongodb, docs/benchmarks.md) gives a row and a count of
        // what did not finish instead of a run that never ends.
        try {
          auto lock = locks.create_lock(base + "-" + std::to_string(i));
          while (std::chrono::steady_clock::now() < end) {
            const auto t0 = bench::now_ns();
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(end + grace - std::chrono::steady_clock::now());
            auto l = co_await lock.async_acquire_for(left);
            co_await l.async_release();
            if (latencies) latencies->push_back((bench::now_ns() - t0) / 1e3);
            ++cycles;
          }
        } catch (const std::exception& e) {
          if (failed++ == 0) first_failure = e.what();
        }
        --running;
      }, asio::detached);
    }
    co_await until_zero(running);
    if (failed > 0)
      std::cout << "  (k = " << k << ": " << failed << " of " << k << " coroutines ended without their last cycle; the first: "
                << first_failure << ")\n";
    if (commands) *commands = static_cast<double>(locks.snapshot().server_calls) / std::max(1L, cycles.load());
    co_return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

// The floor: the same two commands per cycle from plain threads, min(k, 4) of them (the library's
// worker pool has 4 threads), each cycling its share of the k locks, on a collection of the same
// documents as the library's (one per lock: the emulator's updates cost more the more it holds).
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

}  // namespace

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
    std::vector<double> commands(rounds);
    for (int r = 0; r < rounds; ++r) {
      // The two in an alternating order: the emulator's drift within a round (its collections are
      // never dropped) falls on each of them in turn, not always on the last.
      for (int i = 0; i < 2; ++i) {
        if ((r + i) % 2 == 0) rate.lib.push_back(library_cycles(c, k, nullptr, &commands[r]));
        else rate.floor.push_back(floor_cycles(c, k, nullptr));
      }
    }
    dat << k << ' ' << rate.lib_median() << ' ' << rate.floor_median() << '\n';
    print(row{"2 independent locks"}.num("k", k).num("mongolock_per_s", rate.lib_median())
              .num("floor_per_s", rate.floor_median()).num("ratio_to_floor", rate.lib_median() / rate.floor_median())
              .num("commands_per_cycle", bench::percentile(commands, .5)));
  }
}

// Untimed: the first seconds of a fresh server are slower (measured: up to 2x on jongodb).
void warm_up(const config& c) {
  config quick = c;
  quick.seconds = 2;
  library_cycles(quick, 8, nullptr);
  floor_cycles(quick, 8, nullptr);
}

}  // namespace bench
