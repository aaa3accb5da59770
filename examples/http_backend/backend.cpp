// One io_context on one thread; every connection is a coroutine. What matters for mongolock is
// post_report(): try-lock (busy -> 409), the work under lease.async_guard with the fencing token,
// cancellation when the client hangs up, and the release right after.
#include "backend.hpp"

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "fenced_store.hpp"
#include "mongolock.hpp"

namespace http_backend {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using response = http::response<http::string_body>;

// Where a connection is, so that shutdown knows what to interrupt.
enum class phase { reading, acquiring, working, replying };

// Shared by the session coroutine and the disconnect watch's handler, which can run after the
// session moved on.
struct connection {
  explicit connection(tcp::socket s) : socket(std::move(s)) {
    socket.non_blocking(true);  // the disconnect watch's peek must never block the thread
  }
  tcp::socket socket;
  phase now = phase::reading;
  asio::cancellation_signal stop_work;  // emitted when the client hangs up, or at shutdown
  unsigned watch = 0;                   // the current disconnect watch; 0 = none
  unsigned watches = 0;
  bool peer_gone = false;
};

struct backend {
  backend(asio::any_io_executor ex, mongolock::provider& l, const options& o)
      : locks(l),
        store(o.database, o.reports.empty() ? o.collection + "_reports" : o.reports, o.store),
        work(o.work), lock_timeout(o.lock_timeout),
        acceptor(ex, {asio::ip::make_address("127.0.0.1"), o.port}), drained(ex) {}
  mongolock::provider& locks;
  fenced_store store;
  std::chrono::milliseconds work;
  std::chrono::milliseconds lock_timeout;
  tcp::acceptor acceptor;
  std::set<connection*> live;
  bool stopping = false;
  asio::steady_timer drained;  // cancelled when the last connection ends during shutdown
};

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

response reply(http::status status, std::string body) {
  response res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(body) + "\n";
  res.prepare_payload();
  return res;
}

response error_reply(http::status status, std::string_view reason) {
  return reply(status, "{\"error\":" + json_string(reason) + "}");
}

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// The guarded work: "render" for --work-ms (a timer, cancelled like any real I/O would be), then
// write the report's document with the lease's fenced write. `id` by value: a coroutine outlives
// the caller's temporaries; `lease` is the caller's, which awaits this.
asio::awaitable<write_result> render_report(const fenced_store& store, const mongolock::lease& lease, std::string id,
                                            std::chrono::milliseconds work) {
  const auto start = monotonic_ns();
  asio::steady_timer rendering(co_await asio::this_coro::executor, work);
  co_await rendering.async_wait(asio::use_awaitable);  // throws operation_aborted when cancelled
  auto report = "report " + id + " by pid " + std::to_string(::getpid()) + "\n";
  co_return co_await store.write(lease, std::move(id), start, std::move(report));
}

// While the work runs nobody reads the socket, so a client that hangs up would go unnoticed
// until the reply is written. Wait for the socket to become readable: EOF or an error means the
// client is gone, and the work (and with it the lease) is cancelled at once. wait_read + peek
// consumes nothing, so a pipelined next request is left for the session to read; a client that
// half-closes its side after the request counts as gone.
void watch_for_disconnect(const std::shared_ptr<connection>& c) {
  const unsigned id = c->watch = ++c->watches;
  c->socket.async_wait(tcp::socket::wait_read, [c, id](error_code ec) {
    if (c->watch != id) return;  // the work finished first
    c->watch = 0;
    if (!ec) {
      char byte;
      const auto n = c->socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
      if (!ec && n > 0) return;  // more bytes, not a hang-up
      if (ec == asio::error::would_block) return watch_for_disconnect(c);  // a spurious wake-up
    }
    c->peer_gone = true;
    c->stop_work.emit(asio::cancellation_type::terminal);
  });
}

void stop_watching(connection& c) {
  c.watch = 0;
  error_code ignored;
  c.socket.cancel(ignored);  // nothing else is pending on the socket here
}

asio::awaitable<response> post_report(backend& b, std::shared_ptr<connection> c, std::string id) {
  auto lock = b.locks.create_lock("report-" + id);
  c->now = phase::acquiring;
  // Bounded by the request's own limit: a down server answers 503 after lock_timeout, not after
  // the driver's server selection timeout.
  mongolock::diagnostics why;
  auto [ec, lease] = co_await lock.async_try_acquire({.within = b.lock_timeout}, why, asio::as_tuple(asio::deferred));
  if (ec == mongolock::errc::busy) co_return error_reply(http::status::conflict, "busy");
  if (ec == asio::error::operation_aborted) co_return error_reply(http::status::service_unavailable, "shutting down");
  if (ec) {
    // The reason names the servers tried: the log gets it, the client only the outcome.
    std::cerr << "try-lock of report-" << id << ": " << ec.message() << ": " << why.reason << "\n";
    const auto bound = std::to_string(b.lock_timeout.count());
    co_return error_reply(http::status::service_unavailable, "lock server: " + ec.message() + " (bound " + bound + " ms)");
  }

  const std::int64_t token = lease.fencing_token();
  std::optional<write_result> written;
  error_code failure;
  c->now = phase::working;
  watch_for_disconnect(c);
  try {
    // Cancelled when the lease is lost (async_guard) or through stop_work (hang-up, shutdown).
    // Named locals, not temporaries inside co_await: GCC 12 may destroy those twice.
    auto work = render_report(b.store, lease, id, b.work);
    auto guarded =
        lease.async_guard(std::move(work), asio::bind_cancellation_slot(c->stop_work.slot(), asio::use_awaitable));
    written = co_await std::move(guarded);
  } catch (const boost::system::system_error& e) {
    failure = e.code();
  }
  stop_watching(*c);
  c->stop_work.slot().clear();
  c->now = phase::replying;
  // Release now, whatever happened: a cancelled request must not keep the lock until expiry.
  auto [released] = co_await lease.async_release(asio::as_tuple(asio::deferred));
  if (released && released != mongolock::errc::lease_lost && released != mongolock::errc::not_held)
    std::cerr << "release of report-" << id << ": " << released.message() << " (it expires on its own)\n";

  if (failure == mongolock::errc::lease_lost) co_return error_reply(http::status::service_unavailable, "lease lost");
  if (failure && b.stopping) co_return error_reply(http::status::service_unavailable, "shutting down");
  if (failure) co_return error_reply(http::status::internal_server_error, failure.message());
  // Fenced out: a holder with a newer lease already wrote this report (we were paused past our
  // lease, say): a conflict, and our write changed nothing.
  if (written == write_result::stale) co_return error_reply(http::status::conflict, "stale token");
  if (written != write_result::written)
    co_return error_reply(http::status::internal_server_error, "store write failed");
  co_return reply(http::status::ok, "{\"id\":" + json_string(id) + ",\"token\":" + std::to_string(token) + "}");
}

// The provider's counters for a scraper (Prometheus, or OpenTelemetry's Prometheus receiver).
response metrics(const backend& b) {
  response res{http::status::ok, 11};
  res.set(http::field::content_type, mongolock::prometheus_content_type);
  res.body() = mongolock::prometheus_text(b.locks.snapshot());
  res.prepare_payload();
  return res;
}

asio::awaitable<response> route(backend& b, const std::shared_ptr<connection>& c,
                                 const http::request<http::string_body>& req) {
  constexpr std::string_view prefix = "/reports/";
  const std::string_view target(req.target().data(), req.target().size());
  if (target == "/metrics") {
    if (req.method() == http::verb::get) co_return metrics(b);
    auto res = error_reply(http::status::method_not_allowed, "use GET");
    res.set(http::field::allow, "GET");
    co_return res;
  }
  if (!target.starts_with(prefix)) co_return error_reply(http::status::not_found, "not found");
  if (req.method() != http::verb::post) {
    auto res = error_reply(http::status::method_not_allowed, "use POST");
    res.set(http::field::allow, "POST");
    co_return res;
  }
  const auto id = target.substr(prefix.size());
  if (!valid_id(id)) co_return error_reply(http::status::bad_request, "id must be 1-64 of [A-Za-z0-9_-]");
  co_return co_await post_report(b, c, std::string(id));
}

asio::awaitable<void> session(backend& b, tcp::socket socket) {
  auto c = std::make_shared<connection>(std::move(socket));
  b.live.insert(c.get());
  beast::flat_buffer buffer;
  while (!b.stopping) {
    c->now = phase::reading;
    http::request<http::string_body> req;
    auto [ec, n] = co_await http::async_read(c->socket, buffer, req, asio::as_tuple(asio::use_awaitable));
    if (ec) break;  // the client closed, sent garbage, or shutdown cancelled an idle read
    auto res = co_await route(b, c, req);
    if (c->peer_gone) break;  // nobody to answer
    c->now = phase::replying;
    res.keep_alive(req.keep_alive() && !b.stopping);
    auto [wec, wn] = co_await http::async_write(c->socket, res, asio::as_tuple(asio::use_awaitable));
    if (wec || !res.keep_alive()) break;
  }
  error_code ignored;
  c->socket.shutdown(tcp::socket::shutdown_both, ignored);
  b.live.erase(c.get());
  if (b.stopping && b.live.empty()) b.drained.cancel();
}

asio::awaitable<void> accept_loop(backend& b) {
  for (;;) {
    auto [ec, socket] = co_await b.acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (!b.acceptor.is_open()) co_return;  // shutdown
    if (ec) {
      std::cerr << "accept: " << ec.message() << "\n";
      continue;
    }
    asio::co_spawn(b.acceptor.get_executor(), session(b, std::move(socket)), asio::detached);
  }
}

// Stop accepting, end idle connections, cancel in-flight work; then release every lease this
// process holds (async_shutdown also wakes acquisitions in flight) and wait for the replies.
asio::awaitable<int> serve(backend& b) {
  auto ex = co_await asio::this_coro::executor;
  asio::co_spawn(ex, accept_loop(b), asio::detached);
  asio::signal_set signals(ex, SIGINT, SIGTERM);
  co_await signals.async_wait(asio::use_awaitable);

  b.stopping = true;
  error_code ignored;
  b.acceptor.close(ignored);
  // A copy: cancellation handlers may run inline, and must not invalidate what we iterate.
  for (connection* c : std::vector<connection*>(b.live.begin(), b.live.end())) {
    if (c->now == phase::reading) c->socket.cancel(ignored);
    if (c->now == phase::working) c->stop_work.emit(asio::cancellation_type::terminal);
  }
  auto [ec] = co_await b.locks.async_shutdown(asio::as_tuple(asio::deferred));
  if (ec) std::cerr << "shutdown: " << ec.message() << " (that lock expires on its own)\n";
  if (!b.live.empty()) {
    b.drained.expires_after(std::chrono::seconds(5));  // a client that does not read its reply
    co_await b.drained.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  co_return ec ? 1 : 0;
}

}  // namespace

int run(const options& o) {
  asio::io_context io;
  std::optional<mongolock::client> db;
  std::optional<mongolock::provider> locks;
  try {  // neither constructor connects: only a malformed URI or namespace fails here
    // Each driver call also gives up at the request's bound, unless the URI sets its own
    // serverSelectionTimeoutMS: a call abandoned at the bound then frees its worker soon after.
    mongolock::client_options co;
    co.server_selection_timeout = o.lock_timeout;
    db.emplace(io.get_executor(), o.uri, co);
    locks.emplace(*db, o.database, o.collection);
  } catch (const boost::system::system_error& e) {
    std::cerr << "mongolock-http-backend: " << e.what() << "\n";
    return 64;
  }
  std::optional<backend> b;
  try {
    b.emplace(io.get_executor(), *locks, o);
  } catch (const boost::system::system_error& e) {
    std::cerr << "mongolock-http-backend: cannot listen on 127.0.0.1:" << o.port << ": " << e.code().message() << "\n";
    return 1;
  }
  std::printf("listening on %u\n", static_cast<unsigned>(b->acceptor.local_endpoint().port()));
  std::fflush(stdout);

  int rc = 1;
  asio::co_spawn(io, serve(*b), [&](std::exception_ptr e, int r) {
    rc = e ? 1 : r;
    io.stop();  // a connection still open after the drain deadline must not keep us running
  });
  io.run();
  return rc;
}

}  // namespace http_backend
