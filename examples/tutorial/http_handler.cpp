// Tutorial: the lock inside an HTTP request handler, as examples/http_backend does it with
// Boost.Beast; here the handler is called directly, so the program stays short.
//   mongolock-tutorial-http-handler [URI]
#include <boost/asio.hpp>
#include <iostream>
#include <mongolock.hpp>

#include "program.hpp"
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Stands for the protected resource: it would refuse a token below the highest it has seen.
asio::awaitable<void> render_report(std::string id, std::int64_t token) {
  asio::steady_timer rendering(co_await asio::this_coro::executor, 200ms);
  co_await rendering.async_wait(asio::use_awaitable);
  std::cout << "report " << id << " written with fencing token " << token << "\n";
}

// [snippet:http]
// One render per id across every instance: 409 while another request holds the id, 503 when the
// lock server gives no answer within a second, the work fenced by the lease's token.
asio::awaitable<int> post_report(mongolock::provider& locks, std::string id) {
  auto lock = locks.create_lock("report-" + id);
  mongolock::diagnostics why;
  auto [ec, lease] = co_await lock.async_try_acquire({.within = 1s}, why, asio::as_tuple(asio::use_awaitable));
  if (ec == mongolock::errc::busy) co_return 409;
  if (ec) {
    std::cerr << "try-lock of report-" << id << ": " << ec.message() << (why.reason.empty() ? "" : ": " + why.reason) << "\n";
    co_return 503;
  }
  int status = 200;
  try {
    co_await lease.async_guard(render_report(id, lease.fencing_token()));
  } catch (const boost::system::system_error&) {
    status = 503;  // the lease was lost (or the request cancelled): the work stopped
  }
  co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
  co_return status;
}
// [/snippet]

// [snippet:metrics]
// GET /metrics: the provider's counters in the Prometheus text format (no metric per lock name).
std::string get_metrics(const mongolock::provider& locks) {
  return mongolock::prometheus_text(locks.snapshot());  // Content-Type: mongolock::prometheus_content_type
}
// [/snippet]

int main(int argc, char** argv) {
  return tutorial::run(argc, argv, [](mongolock::provider& locks) -> asio::awaitable<void> {
    std::cout << "POST /reports/17: " << co_await post_report(locks, "17") << "\n";
    std::cout << get_metrics(locks);
  });
}
