#pragma once
// Runs one blocking libmongoc call on the client's worker pool and completes on the caller's
// (serial) executor. Whichever comes first completes the caller: the result, a cancellation
// (any type), or the optional time limit. A call that lost the race still runs to completion on
// the server; its result goes to `on_abandoned` so that, for example, a lock granted to an
// acquire that was cancelled meanwhile is released again.
//
// All decisions happen on the caller's executor, which must be a strand (or single-threaded):
// the cancellation handler, the timer and the posted result never race each other.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "detail/client_impl.hpp"
#include "mongolock/error.hpp"

namespace mongolock::detail {

template <class R>
struct offload_state {
  std::optional<boost::asio::any_completion_handler<void(R)>> handler;
  boost::asio::cancellation_slot slot;
  boost::asio::any_io_executor ex;
  std::optional<boost::asio::steady_timer> timer;
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

template <class R, class Token>
auto async_offload(std::shared_ptr<client_impl> client, std::function<R(mongoc_client_t*)> call,
                   std::function<void(R)> on_abandoned, std::chrono::steady_clock::duration limit,
                   Token&& token) {
  namespace asio = boost::asio;
  return asio::async_initiate<Token, void(R)>(
      [](auto handler, std::shared_ptr<client_impl> client, std::function<R(mongoc_client_t*)> call,
         std::function<void(R)> on_abandoned, std::chrono::steady_clock::duration limit) {
        auto st = std::make_shared<offload_state<R>>();
        st->ex = asio::get_associated_executor(handler, client->ex);
        st->slot = asio::get_associated_cancellation_slot(handler);
        st->handler.emplace(std::move(handler));
        st->on_abandoned = std::move(on_abandoned);
        if (st->slot.is_connected()) {
          st->slot.assign([st](asio::cancellation_type) {
            if (st->done) return;
            st->done = true;
            asio::post(st->ex, [st] {
              st->finish(offload_state<R>::with_error(asio::error::operation_aborted, "cancelled"));
            });
          });
        }
        if (limit > std::chrono::steady_clock::duration::zero()) {
          st->timer.emplace(st->ex, limit);
          st->timer->async_wait([st](boost::system::error_code ec) {
            if (ec || st->done) return;
            st->done = true;
            st->finish(offload_state<R>::with_error(make_error_code(errc::timeout),
                                                    "time limit reached while the server call was in flight"));
          });
        }
        const bool queued = client->workers.post([st, call = std::move(call)](mongoc_client_t* c) mutable {
          R r = call(c);
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
        if (!queued) {  // the client was shut down: the job will never run
          asio::post(st->ex, [st] {
            if (st->done) return;
            st->done = true;
            st->finish(offload_state<R>::with_error(make_error_code(errc::server_unavailable),
                                                    "the mongolock client was shut down"));
          });
        }
      },
      token, std::move(client), std::move(call), std::move(on_abandoned), limit);
}

}  // namespace mongolock::detail
