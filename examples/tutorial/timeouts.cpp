// Tutorial: the four ways to bound an acquire (docs/timeouts-and-cancellation.md).
//   mongolock-tutorial-timeouts [URI]
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <iostream>
#include <mongolock.hpp>
#include <variant>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using namespace asio::experimental::awaitable_operators;

void say(const char* what, boost::system::error_code ec) {
  std::cout << what << ": " << (ec ? ec.message() : "held") << "\n";
}

asio::awaitable<void> bounded(mongolock::provider& locks) {
  auto lock = locks.create_lock("report-42");
  {
    // [snippet:bound-for]
    // A bound on the whole wait, server calls included: errc::timeout when it runs out.
    auto [ec, lease] = co_await lock.async_acquire_for(5s, asio::as_tuple(asio::use_awaitable));
    // [/snippet]
    say("acquire_for", ec);
  }  // leaving the scope releases a lease still held, in the background
  {
    // [snippet:bound-try]
    // One look, bounded: errc::busy if held, errc::timeout if the server did not answer in time.
    auto [ec, lease] = co_await lock.async_try_acquire({.within = 1s}, asio::as_tuple(asio::use_awaitable));
    // [/snippet]
    say("try within", ec);
  }
  {
    // [snippet:bound-cancel]
    // Cancellation: whichever finishes first cancels the other. The acquire completes with
    // operation_aborted; a take that landed meanwhile is given back.
    asio::steady_timer giving_up(co_await asio::this_coro::executor, 5s);
    auto first = co_await (lock.async_acquire(asio::use_awaitable) || giving_up.async_wait(asio::use_awaitable));
    if (first.index() == 0) {
      mongolock::lease lease = std::move(std::get<0>(first));
      co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
    }
    // [/snippet]
    say("acquire || timer", first.index() == 0 ? boost::system::error_code{} : make_error_code(mongolock::errc::timeout));
  }
  {
    // [snippet:bound-slot]
    // Per-operation cancellation from your own signal (a client that hung up, a shutdown).
    asio::cancellation_signal hang_up;
    asio::steady_timer later(co_await asio::this_coro::executor, 2s);
    later.async_wait([&](boost::system::error_code) { hang_up.emit(asio::cancellation_type::total); });
    auto [ec, lease] =
        co_await lock.async_acquire(asio::bind_cancellation_slot(hang_up.slot(), asio::as_tuple(asio::use_awaitable)));
    later.cancel();
    // [/snippet]
    say("acquire with a slot", ec);
  }
}

int main(int argc, char** argv) {
  asio::io_context io;
  // [snippet:bound-selection]
  // Every server call first waits up to this for a server: mongolock's default is 5 s, unless the
  // URI sets serverSelectionTimeoutMS. A down server costs each call this long.
  mongolock::client_options options;
  options.server_selection_timeout = 2s;  // or ?serverSelectionTimeoutMS=2000 in the URI, which wins
  mongolock::client db{io.get_executor(), argc > 1 ? argv[1] : "mongodb://127.0.0.1:27017", options};
  // [/snippet]
  mongolock::provider locks{db, "app", "locks"};
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    co_await bounded(locks);
    co_await locks.async_shutdown(asio::as_tuple(asio::use_awaitable));
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  io.run();
}
