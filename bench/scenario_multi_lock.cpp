// ---- Scenario 6: a multi-lock of n names against n single locks and the floor -----------------
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"
#include "direct.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace bench {

namespace {

// Cycles per second of taking `n` names and releasing them: as one multi_lock, or (`multi` false)
// as n single locks acquired one after another and released one after another.
// `commands`, if given: the server commands per cycle (stats::server_calls, a grouped command once).
double library_sets(const config& c, int n, bool multi, double* commands = nullptr) {
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
    if (commands) *commands = static_cast<double>(locks.snapshot().server_calls) / std::max(1L, cycles);
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

}  // namespace

void scenario_multi_lock(const config& c) {
  const int n = 4;
  paired multi, single;
  std::vector<double> commands(rounds);
  for (int r = 0; r < rounds; ++r) {
    multi.lib.push_back(library_sets(c, n, true, &commands[r]));
    single.lib.push_back(library_sets(c, n, false));
    multi.floor.push_back(floor_sets(c, n));
  }
  print(row{"6 multi-lock"}.num("names", n).num("multi_per_s", multi.lib_median())
            .num("single_locks_per_s", single.lib_median()).num("floor_per_s", multi.floor_median())
            .num("ratio_to_floor", multi.lib_median() / multi.floor_median())
            .num("ratio_to_single_locks", multi.lib_median() / single.lib_median())
            .num("multi_commands_per_cycle", bench::percentile(commands, .5)));
}

}  // namespace bench
