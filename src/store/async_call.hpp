#pragma once
// The one way the engine waits for the store: starts one store operation and completes on the
// caller's (serial) executor. Whichever comes first completes the caller: the reply, a
// cancellation (any type), or the optional deadline. A call that lost the race still runs to
// completion on the server; its reply goes to `on_abandoned` so that, for example, a lock
// granted to an acquire that was cancelled meanwhile is released again.
//
// All decisions happen on the caller's executor, which must be a strand (or single-threaded):
// the cancellation handler, the timer and the posted result never race each other.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "mongolock/error.hpp"
#include "model/clocks.hpp"

namespace mongolock::detail {

template <class R>
struct call_state {
  std::optional<boost::asio::any_completion_handler<void(R)>> handler;
  boost::asio::cancellation_slot slot;
  boost::asio::any_io_executor ex;
  // Only when there is a deadline; a pointer, so calls without one (every waiting read) do not
  // carry an empty timer's 120 bytes.
  std::unique_ptr<detail::steady_timer> timer;
  std::function<void(R)> on_abandoned;
  bool done = false;

  void finish(R r) {  // on ex, exactly once
    if (slot.is_connected()) slot.clear();
    if (timer) timer->cancel();
    auto h = std::move(*handler);
    handler.reset();
    std::move(h)(std::move(r));
  }
  static R with_error(boost::system::error_code ec, const char* text) {
    R r{};
    r.ec = ec;
    r.message = text;
    return r;
  }
};

// start(reply) begins the operation; reply may be called from any thread, even inline.
template <class R>
using store_call = std::function<void(std::function<void(R)>)>;
using deadline_t = std::optional<detail::steady_clock::time_point>;

template <class R, class Token>
auto async_call(boost::asio::any_io_executor fallback, store_call<R> start, std::function<void(R)> on_abandoned,
                deadline_t deadline, Token&& token) {
  namespace asio = boost::asio;
  return asio::async_initiate<Token, void(R)>(
      [](auto handler, asio::any_io_executor fallback, store_call<R> start, std::function<void(R)> on_abandoned,
         deadline_t deadline) {
        auto st = std::make_shared<call_state<R>>();
        st->ex = asio::get_associated_executor(handler, fallback);
        st->slot = asio::get_associated_cancellation_slot(handler);
        st->handler.emplace(std::move(handler));
        st->on_abandoned = std::move(on_abandoned);
        if (st->slot.is_connected()) {
          st->slot.assign([st](asio::cancellation_type) {
            if (st->done) return;
            st->done = true;
            asio::post(st->ex, [st] {
              st->finish(call_state<R>::with_error(asio::error::operation_aborted, "cancelled"));
            });
          });
        }
        if (deadline) {
          st->timer = std::make_unique<detail::steady_timer>(st->ex, *deadline);
          st->timer->async_wait([st](boost::system::error_code ec) {
            if (ec || st->done) return;
            st->done = true;
            st->finish(call_state<R>::with_error(make_error_code(errc::timeout),
                                                    "time limit reached while the server call was in flight"));
          });
        }
        start([st](R r) {
          // Always posted, even when the store answers inline: never complete inside initiation.
          asio::post(st->ex, [st, r = std::move(r)]() mutable {
            if (st->done) {
              if (st->on_abandoned) st->on_abandoned(std::move(r));
              st->on_abandoned = nullptr;
              return;
            }
            st->done = true;
            st->finish(std::move(r));
          });
        });
      },
      token, std::move(fallback), std::move(start), std::move(on_abandoned), deadline);
}

}  // namespace mongolock::detail
