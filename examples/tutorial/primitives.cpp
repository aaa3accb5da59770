// Tutorial: the other primitives, each made of plain locks: several names at once, leader
// election, a semaphore and a reader-writer lock (docs/design.md sections 8 to 10).
//   mongolock-tutorial-primitives [URI]
#include <boost/asio.hpp>
#include <iostream>
#include <mongolock.hpp>

#include "program.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

asio::awaitable<void> step(const char* what, std::int64_t token) {
  std::cout << what << " with fencing token " << token << "\n";
  co_return;
}

asio::awaitable<void> several(mongolock::provider& locks) {
  // [snippet:multi]
  auto both = locks.create_multi_lock({"account-17", "account-42"});
  auto held = co_await both.async_acquire_for(5s, asio::use_awaitable);  // all or nothing
  co_await held.async_guard(step("transfer", held.fencing_token("account-17")));  // cancelled if any is lost
  co_await held.async_release(asio::use_awaitable);                       // every lease at once
  // [/snippet]
}

asio::awaitable<void> leading(mongolock::provider& locks) {
  // [snippet:election]
  auto el = locks.create_election("scheduler");
  auto me = el.candidate("10.0.0.7:8080");                           // this process, as a candidate
  auto leader = co_await me.async_acquire(asio::use_awaitable);       // waits until it leads
  co_await leader.async_guard(step("scheduling", leader.term()));  // cancelled if leadership is lost
  auto seen = co_await el.async_leader(asio::use_awaitable);         // anyone: {has_leader, value, term, owner}
  std::cout << "leader " << seen.value << ", term " << seen.term << "\n";
  co_await leader.async_resign(asio::use_awaitable);
  // [/snippet]
}

asio::awaitable<void> shared(mongolock::provider& locks) {
  // [snippet:semaphore]
  auto slots = locks.create_semaphore("render-farm", 4);             // at most 4 holders at once
  auto permit = co_await slots.async_acquire_for(30s, asio::use_awaitable);  // permit.name(): "render-farm#k"
  co_await permit.async_guard(step("rendering", permit.fencing_token()));
  co_await permit.async_release(asio::use_awaitable);
  // [/snippet]
  // [snippet:rw-lock]
  auto cfg = locks.create_rw_lock("config");                            // 16 readers at most by default
  auto reader = cfg.reader();                                          // each side has the acquire set
  auto writer = cfg.writer();
  auto reading = co_await reader.async_acquire(asio::use_awaitable);  // many readers at once
  co_await reading.async_release(asio::use_awaitable);
  auto writing = co_await writer.async_acquire(asio::use_awaitable);  // alone: a multi_lease
  co_await step("writing", writing.highest_fencing_token());             // above every excluded reader's token
  co_await writing.async_release(asio::use_awaitable);
  // [/snippet]
}

int main(int argc, char** argv) {
  return tutorial::run(argc, argv, [](mongolock::provider& locks) -> asio::awaitable<void> {
    co_await several(locks);
    co_await leading(locks);
    co_await shared(locks);
  });
}
