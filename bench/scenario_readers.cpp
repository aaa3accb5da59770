// ---- Scenario 8: readers of a rw_lock against a mutex ----------------------------------------
#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "common.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace bench {

using namespace std::chrono_literals;

namespace {

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
        auto reader = rw.reader();  // named: GCC 12 and temporaries in co_await
        while (std::chrono::steady_clock::now() < end) {
          mongolock::lease held;
          if (readers) held = co_await reader.async_acquire();
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
// `commands`, if given: the server commands per cycle (stats::server_calls, a grouped command once).
double write_cycles(const config& c, bool writer, double* commands = nullptr) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("rww"));
    const auto name = unique("rww");
    auto rw = locks.create_rw_lock(name);
    auto mutex = locks.create_lock(name);
    long cycles = 0;
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (writer) {
        auto side = rw.writer();  // named: GCC 12 and temporaries in co_await
        auto held = co_await side.async_acquire();
        co_await held.async_release();
      } else {
        auto held = co_await mutex.async_acquire();
        co_await held.async_release();
      }
      ++cycles;
    }
    if (commands) *commands = static_cast<double>(locks.snapshot().server_calls) / std::max(1L, cycles);
    co_return cycles / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

}  // namespace

void scenario_readers(const config& c) {
  const int k = 8;
  const auto hold = 20ms;
  std::vector<double> read, mutex, write, lock, write_commands(rounds);
  for (int r = 0; r < rounds; ++r) {
    read.push_back(sections(c, k, hold, true));
    mutex.push_back(sections(c, k, hold, false));
    write.push_back(write_cycles(c, true, &write_commands[r]));
    lock.push_back(write_cycles(c, false));
  }
  const auto m = [](const std::vector<double>& v) { return bench::percentile(v, .5); };
  // Ideal: k sections in parallel against one at a time, so k times the mutex.
  print(row{"8 rw_lock readers"}.num("readers", k).num("hold_ms", static_cast<double>(hold.count()))
            .num("read_sections_per_s", m(read)).num("mutex_sections_per_s", m(mutex))
            .num("ratio_to_mutex", m(read) / m(mutex)).num("ideal_ratio", k)
            .num("write_cycles_per_s", m(write)).num("lock_cycles_per_s", m(lock))
            .num("write_ratio_to_lock", m(write) / m(lock)).num("write_commands_per_cycle", m(write_commands)));
}

}  // namespace bench
