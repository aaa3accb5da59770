#pragma once
// Every workaround of a Boost 1.81 defect, in one place, so that they can go together when the
// floor moves. Each was found and checked on 1.81 (BOOST_VERSION 108100) only; they are not gated
// on BOOST_VERSION because no later version could be tested here, and each is harmless where the
// defect is gone. Elsewhere:
//   - asio::deferred, the default token, cannot carry a failure's reason into the exception
//     co_await throws: co_await of a deferred operation builds it inside Asio from the code
//     alone, and a deferred operation completing with (exception_ptr, T) does not compile there
//     (1. below). So with_reason (mongolock/with_reason.hpp) is applied by default to
//     use_awaitable and use_future only (detail/initiation.hpp, async_op);
//   - any_completion_handler's move assignment recurses without end: src/engine/lease_state.hpp
//     and src/engine/name_turns.hpp construct instead of assigning.
//
// 1. Operations that complete with void(exception_ptr[, T]) (async_guard, async_run) cannot be
//    co_awaited as a deferred operation: awaitable_async_op_handler's resume() tests `*result`
//    instead of `*result.ex_` and does not compile. Given asio::deferred, they return the
//    awaitable instead (as lazy): awaitable_instead_v says when.
//
// 2. co_spawn with a cancellation relay (co_spawn_relayed). co_spawn puts a handler into the
//    completion handler's cancellation slot that, when the emitter is not already on the
//    coroutine's executor, posts the emission there with a raw pointer to a signal living in that
//    slot's memory. If the operation completes first and the slot's owner then destroys or reuses
//    it (a parallel_group does so once all its operations are done: `||`, wait_for_one, a guard's
//    lost lease), the posted emission uses freed memory. Here the slot holds a relay shared by the
//    slot's handler, the posted emission and the completion, so it outlives all three, and once
//    the operation completed it emits nothing.
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>
#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace mongolock::detail {

// 1.
template <class Token>
inline constexpr bool awaitable_instead_v = std::is_same_v<std::decay_t<Token>, boost::asio::deferred_t>;

// 2.
struct cancel_relay {
  boost::asio::cancellation_signal signal;
  std::atomic<bool> done{false};  // the completion and a posted emission may run on different threads
};

// co_spawn's completion, void(exception_ptr[, T]). A class template, not conditional_t, which
// would form void(exception_ptr, void).
template <class T>
struct spawn_signature_of {
  using type = void(std::exception_ptr, T);
};
template <>
struct spawn_signature_of<void> {
  using type = void(std::exception_ptr);
};

// As boost::asio::co_spawn(ex, std::move(a), token), with the relay when the token's handler has
// a connected cancellation slot. The handler runs on its associated executor, as with co_spawn.
template <class Executor, class T, class Token>
auto co_spawn_relayed(const Executor& ex, boost::asio::awaitable<T> a, Token&& token) {
  namespace asio = boost::asio;
  return asio::async_initiate<Token, typename spawn_signature_of<T>::type>(
      [](auto handler, Executor ex, asio::awaitable<T> a) {
        auto slot = asio::get_associated_cancellation_slot(handler);
        if (!slot.is_connected()) return asio::co_spawn(ex, std::move(a), std::move(handler));
        auto relay = std::make_shared<cancel_relay>();
        slot.assign([relay, ex](asio::cancellation_type type) {
          asio::dispatch(ex, [relay, type] {
            if (!relay->done.load(std::memory_order_acquire)) relay->signal.emit(type);
          });
        });
        // The caller's slot is left alone: its signal may be emitting on another thread, and
        // clearing it then would free the handler being run. The relay makes a late emission
        // harmless instead. The handler's executor is kept busy until the handler runs, as
        // co_spawn itself does.
        std::optional work{asio::prefer(asio::get_associated_executor(handler, ex), asio::execution::outstanding_work.tracked)};
        asio::co_spawn(ex, std::move(a),
                       asio::bind_cancellation_slot(
                           relay->signal.slot(),
                           [h = std::move(handler), relay, work = std::move(work)](auto&&... results) mutable {
                             relay->done.store(true, std::memory_order_release);
                             asio::dispatch(asio::append(std::move(h), std::forward<decltype(results)>(results)...));
                             work.reset();
                           }));
      },
      token, ex, std::move(a));
}

}  // namespace mongolock::detail
