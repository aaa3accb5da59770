// Tutorial: a scheduled job that runs on one host of many, as
//   mongolock --wait 5m --ttl 2m --hold-at-least 1m run nightly-report -- build-report
// would run it (docs/cli.md), with the exit statuses the command uses.
//   mongolock-tutorial-job [URI]
#include <boost/asio.hpp>
#include <iostream>
#include <mongolock.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> build_report(std::int64_t token) {
  asio::steady_timer building(co_await asio::this_coro::executor, 1s);
  co_await building.async_wait(asio::use_awaitable);
  std::cout << "report built with fencing token " << token << "\n";
}

asio::awaitable<int> nightly(mongolock::provider& locks) {
  // [snippet:job]
  auto lock = locks.create_lock("nightly-report", {.expiry = 2min});  // this lock's own lease length
  mongolock::diagnostics why;
  auto [ec, lease] = co_await lock.async_acquire_for(5min, why, asio::as_tuple(asio::use_awaitable));
  if (ec == mongolock::errc::timeout) co_return 75;  // another host had it all along
  if (ec) {
    std::cerr << "not acquired: " << ec.message() << (why.reason.empty() ? "" : ": " + why.reason) << "\n";
    co_return 70;
  }
  co_await lease.async_guard(build_report(lease.fencing_token()));  // throws lease_lost if it is lost
  co_await lease.async_record_completion(asio::use_awaitable);    // lock_info::last_completed_token
  co_await lease.async_release_after(1min, asio::use_awaitable);  // hosts that start later find it busy
  co_return 0;
  // [/snippet]
}

int main(int argc, char** argv) {
  asio::io_context io;
  mongolock::client db{io.get_executor(), argc > 1 ? argv[1] : "mongodb://127.0.0.1:27017"};
  mongolock::provider locks{db, "app", "locks"};
  int status = 70;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    try {
      status = co_await nightly(locks);
    } catch (const boost::system::system_error& e) {
      std::cerr << e.what() << "\n";
      status = e.code() == mongolock::errc::lease_lost ? 74 : 70;
    }
    co_await locks.async_shutdown(asio::as_tuple(asio::use_awaitable));
  }, asio::detached);
  io.run();
  return status;
}
