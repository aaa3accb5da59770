// Started by the process suite under libfaketime: arms 200 timers on an io_context that another
// thread runs, each due within 50 us of its arming, and exits 0 only if all of them fire within
// 1.5 s. Asio arms its timerfd with an absolute 1 ns when the first timer is already due, and
// libfaketime moves an absolute time by the process's offset: with an offset further back than
// the machine's uptime that instant lies in the future, and no timer of the process fires again
// (processes.hpp, behind()).
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

int main() {
  namespace asio = boost::asio;
  using namespace std::chrono_literals;
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread runner([&] { io.run(); });
  auto strand = asio::make_strand(io);
  std::atomic<int> fired{0};
  constexpr int count = 200;
  std::vector<std::unique_ptr<asio::steady_timer>> timers;
  for (int i = 0; i < count; ++i) {
    auto t = std::make_unique<asio::steady_timer>(strand, std::chrono::microseconds(i % 50));
    t->async_wait([&](boost::system::error_code) { ++fired; });
    timers.push_back(std::move(t));
    std::this_thread::sleep_for(300us);
  }
  const auto until = std::chrono::steady_clock::now() + 1500ms;
  while (fired < count && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  std::printf("fired %d of %d\n", fired.load(), count);
  work.reset();
  io.stop();
  runner.join();
  return fired == count ? 0 : 1;
}
