#pragma once
// Runs an operation body (a coroutine returning a tuple of results) on a strand and completes a
// type-erased handler with those results on the handler's own executor. The handler's
// cancellation slot is handed to the coroutine, so cancelling the caller cancels the body.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/strand.hpp>
#include <exception>
#include <tuple>

#include "mongolock/detail/asio_compat.hpp"

namespace mongolock::detail {

using strand_type = boost::asio::strand<boost::asio::any_io_executor>;

// The caller's cancellation slot reaches the body through co_spawn_relayed (asio_compat.hpp:
// Boost 1.81's own relay can use freed memory).
template <class... Args>
void spawn_op(strand_type strand, boost::asio::awaitable<std::tuple<Args...>> body,
              boost::asio::any_completion_handler<void(Args...)> handler, bool cancellable = true) {
  namespace asio = boost::asio;
  auto slot = cancellable ? asio::get_associated_cancellation_slot(handler) : asio::cancellation_slot();
  co_spawn_relayed(strand, std::move(body),
                   asio::bind_cancellation_slot(
                       slot, [h = std::move(handler)](std::exception_ptr e, std::tuple<Args...> r) mutable {
                         // Bodies report failures as error codes; an exception here is a library
                         // bug (or bad_alloc): let it surface rather than hide it.
                         if (e) std::rethrow_exception(e);
                         std::apply(
                             [&](auto&&... a) {
                               asio::dispatch(asio::append(std::move(h), std::forward<decltype(a)>(a)...));
                             },
                             std::move(r));
                       }));
}

}  // namespace mongolock::detail
