// ---- Scenario 3: hand-off between processes ---------------------------------------------------
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "common.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "spawn.hpp"
#include "stats.hpp"

namespace bench {

namespace {

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

}  // namespace

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

}  // namespace bench
