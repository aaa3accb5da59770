#include "hop.hpp"

#include <atomic>
#include <boost/asio.hpp>
#include <functional>
#include <thread>

#include "stats.hpp"

namespace bench {

std::vector<double> bare_hops(int n, double busy_us) {
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::atomic<bool> stop{false};
  // One slot, filled by the io thread and emptied by the worker: a queue of one job at a time.
  std::atomic<std::function<void()>*> slot{nullptr};
  std::thread worker([&] {
    while (!stop.load(std::memory_order_acquire)) {
      auto* job = slot.exchange(nullptr, std::memory_order_acq_rel);
      if (!job) {
        std::this_thread::yield();
        continue;
      }
      (*job)();
    }
  });
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(n));
  std::int64_t sent = 0;
  std::function<void()> job;
  std::function<void()> send = [&] {
    sent = now_ns();
    slot.store(&job, std::memory_order_release);
  };
  // On the worker: the stand-in for a driver call, then the completion back to the io thread.
  const auto busy_ns = static_cast<std::int64_t>(busy_us * 1000);
  job = [&] {
    const auto until = now_ns() + busy_ns;
    while (now_ns() < until) {
    }
    boost::asio::post(io, [&] {
      out.push_back(static_cast<double>(now_ns() - sent - busy_ns) / 1000.0);
      if (static_cast<int>(out.size()) < n) send();
      else guard.reset();
    });
  };
  boost::asio::post(io, send);
  io.run();
  stop = true;
  worker.join();
  return out;
}

}  // namespace bench
