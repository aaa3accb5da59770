#include "handoff.hpp"

#include <unistd.h>

#include <boost/asio.hpp>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "direct.hpp"
#include "mongolock.hpp"
#include "stats.hpp"

namespace bench {

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct record {
  std::int64_t requested, acquired, released;
  int worker;
};

void write(const child_args& a, const std::vector<record>& recs, std::uint64_t commands) {
  std::ofstream out(a.out);
  for (auto& r : recs)
    out << r.requested << ' ' << r.acquired << ' ' << r.released << ' ' << ::getpid() << '.' << r.worker << '\n';
  out << "commands " << commands << '\n';
}

int run_mongolock(const child_args& a) {
  asio::io_context io;
  mongolock::client db(io.get_executor(), a.uri);
  mongolock::provider locks(db, "mongolock_bench", a.collection);  // defaults: 10-800 ms backoff, 30 s expiry
  std::vector<record> recs;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(a.seconds);
  for (int w = 0; w < a.workers; ++w) {
    asio::co_spawn(io, [&, w]() -> asio::awaitable<void> {
      asio::steady_timer t(co_await asio::this_coro::executor);
      while (std::chrono::steady_clock::now() < end) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        const auto requested = now_ns();
        auto [ec, l] = co_await locks.create_lock(a.name).async_acquire_for(std::max(left, 1ms), asio::as_tuple(asio::deferred));
        if (ec) break;
        const auto acquired = now_ns();
        t.expires_after(std::chrono::milliseconds(a.hold_ms));
        co_await t.async_wait(asio::deferred);
        const auto released = now_ns();  // taken before the release is sent: hand-off includes it
        co_await l.async_release(asio::as_tuple(asio::deferred));
        recs.push_back({requested, acquired, released, w});
        if (a.think_ms == 0) continue;  // asks again at once
        t.expires_after(std::chrono::milliseconds(a.think_ms));
        co_await t.async_wait(asio::deferred);
      }
    }, asio::detached);
  }
  io.run();
  write(a, recs, locks.snapshot().server_calls);
  return 0;
}

// The seed article: upsert with $setOnInsert; if someone else's document is there, sleep a fixed
// 100 ms and retry; delete to release. DistributedLock.MongoDB (seed 004, re-implemented): a
// write per attempt, then a random 10..800 ms sleep. One blocking thread per worker.
int run_polling(const child_args& a) {
  const bool dl = a.algo == "dlreimpl";
  std::mutex mu;
  std::vector<record> recs;
  std::atomic<std::uint64_t> commands{0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(a.seconds);
  std::vector<std::thread> threads;
  for (int w = 0; w < a.workers; ++w) {
    threads.emplace_back([&, w] {
      direct_conn c(a.uri, "mongolock_bench", a.collection);
      const std::string owner = std::to_string(::getpid()) + "." + std::to_string(w);
      std::mt19937 rng(std::random_device{}());
      std::uniform_int_distribution<int> dl_sleep(10, 800);
      std::int64_t requested = now_ns();
      while (std::chrono::steady_clock::now() < end) {
        ++commands;
        const bool took = dl ? dl_try_acquire(c, a.name, owner, 30s) : seed_try_acquire(c, a.name, owner);
        if (!took) {
          std::this_thread::sleep_for(dl ? std::chrono::milliseconds(dl_sleep(rng)) : 100ms);
          continue;
        }
        const auto acquired = now_ns();
        std::this_thread::sleep_for(std::chrono::milliseconds(a.hold_ms));
        const auto released = now_ns();
        if (dl) dl_release(c, a.name, owner);
        else seed_release(c, a.name, owner);
        ++commands;
        {
          std::lock_guard g(mu);
          recs.push_back({requested, acquired, released, w});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(a.think_ms));
        requested = now_ns();
      }
    });
  }
  for (auto& t : threads) t.join();
  write(a, recs, commands);
  return 0;
}

}  // namespace

int run_child(const child_args& a) { return a.algo == "mongolock" ? run_mongolock(a) : run_polling(a); }

}  // namespace bench
