// Tutorial: acquire a lock, use its fencing token, release it, shut down. README.md's example.
//   mongolock-tutorial-acquire [URI]
// [snippet:acquire]
#include <boost/asio.hpp>
#include <iostream>
#include <mongolock.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> report(mongolock::provider& locks) {
  auto lock = locks.create_lock("report-42");
  mongolock::diagnostics why;  // the reason for a failure, in words
  auto [ec, lease] = co_await lock.async_acquire_for(5s, why, asio::as_tuple(asio::use_awaitable));
  if (ec) {
    std::cerr << "not acquired: " << ec.message() << (why.reason.empty() ? "" : ": " + why.reason) << "\n";
  } else {
    std::cout << "held with fencing token " << lease.fencing_token() << "\n";  // pass it to the resource
    co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
  }
  co_await locks.async_shutdown(asio::as_tuple(asio::use_awaitable));  // before exit: frees every lease
}

int main(int argc, char** argv) {
  asio::io_context io;
  mongolock::client db{io.get_executor(), argc > 1 ? argv[1] : "mongodb://127.0.0.1:27017"};
  mongolock::provider locks{db, "app", "locks"};  // database, collection; destroyed before `db`
  asio::co_spawn(io, report(locks), [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  io.run();
}
// [/snippet]
