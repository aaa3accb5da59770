// ---- Scenario 9: an HTTP-style load, many requests each locking one id of a skewed set --------
// 64 concurrent requests through one provider, each locking one of 1,000 ids drawn from a Zipf
// distribution (s = 1: the hottest id draws about 13 % of requests), releasing at once. Against
// the floor: the same draws, one command per operation from 4 plain threads (the library's worker
// pool has 4), each thread owning the ids congruent to it so that the floor never contends.
// Both are timed in a steady state, on collections of the same documents: every id's lock
// document, written before the clock starts (the library's by one untimed use of every id, timed
// apart as `first_use_of_every_id_s`). The emulator's update costs more the more documents
// a collection holds, so a library timed from an empty collection against a full floor looked
// 2.8x the floor in 2 s runs and 1.4x in 10 s runs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "direct.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "stats.hpp"
#include "zipf.hpp"

namespace bench {

namespace {

constexpr int ids = 1000;
constexpr int requests_at_once = 64;

struct load_result {
  double per_s = 0, p99_us = 0, commands = 0, first_use_s = 0, failed = 0;
};

// Requests that failed (an acquire's timeout, a release's error): counted, the first one's reason
// kept, and the load goes on, as a server answers such a request with an error and serves the
// next. Caught per request: a detached coroutine's exception would vanish, and the wait for its
// end never end.
struct failures {
  long count = 0;
  std::string first;
  void add(const std::exception& e) {
    if (count++ == 0) first = e.what();
  }
};

// One acquire and release of `lock` within `bound`; false (and counted) if either failed.
asio::awaitable<bool> use_once(mongolock::lock& lock, std::chrono::milliseconds bound, failures& failed) {
  try {
    auto held = co_await lock.async_acquire_for(bound);
    co_await held.async_release();
    co_return true;
  } catch (const std::exception& e) {
    failed.add(e);
    co_return false;
  }
}

// One use of every id, 64 at a time: its document, as a warm server has it.
asio::awaitable<void> use_every_id(std::vector<mongolock::lock>& by_id, failures& failed) {
  std::atomic<int> next{0}, running{requests_at_once};
  auto ex = co_await asio::this_coro::executor;
  for (int r = 0; r < requests_at_once; ++r) {
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
      for (int id = next++; id < ids; id = next++)
        co_await use_once(by_id[static_cast<std::size_t>(id)], std::chrono::seconds(30), failed);
      --running;
    }, asio::detached);
  }
  co_await until_zero(running);
}

load_result library_requests(const config& c) {
  return run_io<load_result>(c, [&](mongolock::client& db) -> asio::awaitable<load_result> {
    mongolock::provider locks(db, "mongolock_bench", fresh_collection("http"));
    const auto base = unique("http");
    std::vector<mongolock::lock> by_id;
    for (int i = 0; i < ids; ++i) by_id.push_back(locks.create_lock(base + "-" + std::to_string(i)));
    failures warm_up_failed, failed;
    const auto warm_from = std::chrono::steady_clock::now();
    co_await use_every_id(by_id, warm_up_failed);
    if (warm_up_failed.count > 0)  // an id without its documents: not the steady state this times
      std::cout << "  (9: " << warm_up_failed.count << " first uses failed; the first: " << warm_up_failed.first << ")\n";
    const double first_use_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_from).count();
    const auto calls_before = locks.snapshot().server_calls;
    std::atomic<long> served{0}, requests{0};  // served: by `end`, the rate's window
    std::atomic<int> running{requests_at_once};
    std::vector<double> latencies;
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    const zipf_table draws(ids, 1.0);
    auto ex = co_await asio::this_coro::executor;
    for (int r = 0; r < requests_at_once; ++r) {
      asio::co_spawn(ex, [&, r]() -> asio::awaitable<void> {
        std::mt19937_64 rng(static_cast<std::uint64_t>(r) + 1);
        while (std::chrono::steady_clock::now() < end) {
          auto& lock = by_id[static_cast<std::size_t>(draws.draw(rng))];
          const auto t0 = bench::now_ns();
          const bool ok = co_await use_once(lock, std::chrono::seconds(5), failed);
          // A failed request's time counts too (its answer, an error, came that late).
          latencies.push_back((bench::now_ns() - t0) / 1e3);  // one io thread: no race
          ++requests;
          if (ok && std::chrono::steady_clock::now() <= end) ++served;
        }
        --running;
      }, asio::detached);
    }
    co_await until_zero(running);
    load_result out;
    // The rate over the run's window only: the requests still in flight at its end drain at a
    // falling concurrency, which is not the load this times.
    out.per_s = served / std::chrono::duration<double>(end - start).count();
    out.p99_us = bench::percentile(latencies, .99);
    out.commands = static_cast<double>(locks.snapshot().server_calls - calls_before) / std::max(1L, requests.load());
    out.first_use_s = first_use_s;
    out.failed = static_cast<double>(failed.count);
    if (failed.count > 0)
      std::cout << "  (9: " << failed.count << " of " << requests << " requests failed; the first: " << failed.first << ")\n";
    co_return out;
  });
}

load_result floor_requests(const config& c) {
  const int threads = 4;
  std::atomic<long> served{0};
  std::atomic<int> floor_failed{0};
  std::mutex mu;
  std::vector<double> latencies;
  const auto base = unique("floorhttp");
  const auto coll = fresh_collection("floorhttp");
  {  // the documents first, outside the timed part: the library's collection after its first use
    bench::direct_conn conn(c.uri, "mongolock_bench", coll);
    for (int i = 0; i < ids; ++i) bench::insert_free(conn, base + "-" + std::to_string(i));
  }
  const zipf_table draws(ids, 1.0);
  const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      bench::direct_conn conn(c.uri, "mongolock_bench", coll);
      std::vector<std::int64_t> tokens(ids, 0);
      std::mt19937_64 rng(static_cast<std::uint64_t>(t) + 101);
      const std::string owner = "0123456789abcdef0123456789abcdef";
      std::vector<double> mine;
      while (std::chrono::steady_clock::now() < end) {
        int id = draws.draw(rng);
        id = id - id % threads + t;  // this thread's id nearest the draw
        if (id >= ids) id -= threads;
        const auto t0 = bench::now_ns();
        if (!bench::floor_cycle(conn, base + "-" + std::to_string(id), tokens[static_cast<std::size_t>(id)], owner)) {
          ++floor_failed;  // reported below; this thread's latencies still count
          break;
        }
        mine.push_back((bench::now_ns() - t0) / 1e3);
        if (std::chrono::steady_clock::now() <= end) ++served;
      }
      std::lock_guard g(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : pool) t.join();
  if (floor_failed > 0) std::cout << "  (9: " << floor_failed << " floor threads ended on a failed command)\n";
  load_result out;
  out.per_s = served / std::chrono::duration<double>(end - start).count();
  out.p99_us = bench::percentile(latencies, .99);
  out.commands = 2;
  return out;
}

}  // namespace

void scenario_http_load(const config& c) {
  std::vector<double> lib_rate, lib_p99, lib_commands, lib_first_use, lib_failed, floor_rate, floor_p99;
  for (int r = 0; r < rounds; ++r) {
    const auto lib = library_requests(c);
    const auto floor = floor_requests(c);
    lib_rate.push_back(lib.per_s), lib_p99.push_back(lib.p99_us), lib_commands.push_back(lib.commands);
    lib_first_use.push_back(lib.first_use_s), lib_failed.push_back(lib.failed);
    floor_rate.push_back(floor.per_s), floor_p99.push_back(floor.p99_us);
  }
  const auto m = [](const std::vector<double>& v) { return bench::percentile(v, .5); };
  print(row{"9 http-style zipf load"}.num("ids", ids).num("concurrent", requests_at_once)
            .num("mongolock_per_s", m(lib_rate)).num("mongolock_p99_us", m(lib_p99))
            .num("commands_per_request", m(lib_commands)).num("first_use_of_every_id_s", m(lib_first_use))
            .num("failed_requests", m(lib_failed))
            .num("floor_per_s", m(floor_rate)).num("floor_p99_us", m(floor_p99))
            .num("ratio_to_floor", m(lib_rate) / m(floor_rate)));
}

}  // namespace bench
