#include "common.hpp"

#include <unistd.h>

#include <iostream>

namespace bench {

using namespace std::chrono_literals;

std::vector<row> rows;

void print(const row& r) {
  std::cout << "  " << r.scenario;
  for (auto& [k, v] : r.fields) std::cout << "  " << k << "=" << v;
  std::cout << std::endl;
  rows.push_back(r);
}

std::string unique(const std::string& p) { return p + "-" + std::to_string(::getpid()) + "-" + std::to_string(bench::now_ns() % 100000); }

std::string fresh_collection(const std::string& label) {
  static int n = 0;
  return label + "_" + std::to_string(::getpid()) + "_" + std::to_string(++n);
}

asio::awaitable<void> until_zero(const std::atomic<int>& n) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  while (n > 0) {
    t.expires_after(10ms);
    co_await t.async_wait(asio::deferred);
  }
}

}  // namespace bench
