// Tutorial: a try-lock, bounded, and the confirmation of a holder that has long been silent.
//   mongolock-tutorial-try [URI]
#include <boost/asio.hpp>
#include <iostream>
#include <mongolock.hpp>

#include "program.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> try_once(mongolock::provider& locks) {
  auto lock = locks.create_lock("report-42");
  // [snippet:try]
  mongolock::diagnostics why;
  auto [ec, lease] = co_await lock.async_try_acquire({.within = 2s}, why, asio::as_tuple(asio::use_awaitable));
  if (ec == mongolock::errc::busy) {
    std::cout << "busy: another owner holds it\n";  // however long it has been silent
  } else if (ec) {
    std::cerr << "try failed: " << ec.message() << (why.reason.empty() ? "" : ": " + why.reason) << "\n";
  } else {
    std::cout << "held with fencing token " << lease.fencing_token() << "\n";
    co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
  }
  // [/snippet]
}

asio::awaitable<void> try_confirming(mongolock::provider& locks) {
  auto lock = locks.create_lock("nightly-report");
  // [snippet:try-confirm]
  // A holder silent for over 3 expiries (by its own clock) is watched for expiry + margin, and
  // taken over if its heartbeat did not move; one that renews meanwhile means busy.
  auto [ec, lease] = co_await lock.async_try_acquire({.within = 2min, .confirm_silent_holder = true},
                                                     asio::as_tuple(asio::use_awaitable));
  // [/snippet]
  std::cout << (ec ? ec.message() : "held, token " + std::to_string(lease.fencing_token())) << "\n";
  if (!ec) co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
}

int main(int argc, char** argv) {
  return tutorial::run(argc, argv, [](mongolock::provider& locks) -> asio::awaitable<void> {
    co_await try_once(locks);
    co_await try_confirming(locks);
  });
}
