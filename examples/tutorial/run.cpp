// Tutorial: scoped use. async_run acquires, runs the work guarded, always releases (and waits
// for the release), then completes with the work's result or exception.
//   mongolock-tutorial-run [URI]
#include <boost/asio.hpp>
#include <iostream>
#include <mongolock.hpp>

#include "program.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<int> render_report(int id) {
  asio::steady_timer rendering(co_await asio::this_coro::executor, 100ms);
  co_await rendering.async_wait(asio::use_awaitable);
  co_return id % 7 + 1;  // pages
}

asio::awaitable<void> update_report(std::int64_t token) {
  std::cout << "updating with fencing token " << token << "\n";
  co_return;
}

asio::awaitable<void> scoped(mongolock::provider& locks) {
  auto lock = locks.create_lock("report-42");
  // [snippet:run]
  int pages = co_await lock.async_run(render_report(42));  // throws the acquire's error with its reason
  // The same, with the work made from the lease once it is held, to pass its fencing token on.
  co_await lock.async_run([](const mongolock::lease& l) { return update_report(l.fencing_token()); });
  // [/snippet]
  std::cout << pages << " pages\n";
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, scoped); }
