// Tutorial: work guarded by a lease, cancelled if the lease is lost (a renewal finds another
// owner, or none succeeds before the lease's local deadline: docs/design.md section 2).
//   mongolock-tutorial-guard [URI]
#include <boost/asio.hpp>
#include <iostream>
#include <mongolock.hpp>

#include "program.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Stands for any work made of Asio operations: each one is where a cancellation lands.
asio::awaitable<void> update_report(std::int64_t token) {
  asio::steady_timer writing(co_await asio::this_coro::executor, 100ms);
  co_await writing.async_wait(asio::use_awaitable);
  std::cout << "report written with fencing token " << token << "\n";
}

asio::awaitable<void> guarded(mongolock::provider& locks) {
  auto lock = locks.create_lock("report-42");
  // [snippet:guard]
  auto lease = co_await lock.async_acquire(asio::use_awaitable);  // waits; a failure throws with its reason
  try {
    co_await lease.async_guard(update_report(lease.fencing_token()));  // cancelled if the lease is lost
  } catch (const boost::system::system_error& e) {
    if (e.code() != mongolock::errc::lease_lost) throw;
    std::cerr << "lease lost: the work was cancelled\n";
  }
  co_await lease.async_release(asio::as_tuple(asio::use_awaitable));  // lease_lost after a loss: ignored
  // [/snippet]
}

int main(int argc, char** argv) { return tutorial::run(argc, argv, guarded); }
