#include "handoff.hpp"

#include <unistd.h>

#include <boost/asio.hpp>
#include <fstream>
#include <mutex>
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
  std::int64_t acquired, released;
  int worker;
};

void write(const child_args& a, const std::vector<record>& recs, std::uint64_t commands) {
  std::ofstream out(a.out);
  for (auto& r : recs) out << r.acquired << ' ' << r.released << ' ' << ::getpid() << '.' << r.worker << '\n';
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
        auto [ec, l] = co_await locks.create_lock(a.name).async_acquire_for(std::max(left, 1ms), asio::as_tuple(asio::deferred));
        if (ec) break;
        const auto acquired = now_ns();
        t.expires_after(std::chrono::milliseconds(a.hold_ms));
        co_await t.async_wait(asio::deferred);
        const auto released = now_ns();  // taken before the release is sent: hand-off includes it
        co_await l.async_release(asio::as_tuple(asio::deferred));
        recs.push_back({acquired, released, w});
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
// 100 ms and retry; delete to release. One blocking thread per worker.
int run_seed(const child_args& a) {
  std::mutex mu;
  std::vector<record> recs;
  std::atomic<std::uint64_t> commands{0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(a.seconds);
  std::vector<std::thread> threads;
  for (int w = 0; w < a.workers; ++w) {
    threads.emplace_back([&, w] {
      direct_conn c(a.uri, "mongolock_bench", a.collection);
      const std::string owner = std::to_string(::getpid()) + "." + std::to_string(w);
      while (std::chrono::steady_clock::now() < end) {
        ++commands;
        if (!seed_try_acquire(c, a.name, owner)) {
          std::this_thread::sleep_for(100ms);
          continue;
        }
        const auto acquired = now_ns();
        std::this_thread::sleep_for(std::chrono::milliseconds(a.hold_ms));
        const auto released = now_ns();
        seed_release(c, a.name, owner);
        ++commands;
        {
          std::lock_guard g(mu);
          recs.push_back({acquired, released, w});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(a.think_ms));
      }
    });
  }
  for (auto& t : threads) t.join();
  write(a, recs, commands);
  return 0;
}

}  // namespace

int run_child(const child_args& a) { return a.algo == "seed" ? run_seed(a) : run_mongolock(a); }

}  // namespace bench
