// ---- Scenarios 4 and 5: many waiters, many held leases ----------------------------------------
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "common.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace bench {

using namespace std::chrono_literals;

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

}  // namespace bench
