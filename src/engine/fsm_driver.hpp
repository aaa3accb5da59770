#pragma once
// The one driver of the acquire and the release machines of src/sansio (docs/design.md section
// 12): it performs each action a machine asks for (a store call, a wait) and feeds what happened
// back through the machine's resume(), until the machine is done; then it returns that last
// action. (lease_fsm has its own loop in lease_state.cpp: its renewals go through the provider's
// batch; declare_fsm asks for one call, sent by permits.cpp.)
// What to do next is the machine's (src/sansio); what is particular to one operation (the request
// it sends, what an outcome does to the provider) is its adapter's: acquire.cpp, release.cpp.
//
// An adapter `M` provides:
//   using action = ...;                        the machine's action
//   driver_step step(const action&) const;      what kind of work the action is
//   fsm_call call(const action&);              the store call of a `call` step, its send time set
//   action resume(const action&, fsm_reply&);  the reply, moved into the machine's input
//   store_ops& ops();
// and, if its machine waits or can be cancelled (an acquire; a release does neither):
//   boot_clock::time_point wait_until(const action&) const;  boot_timer& timer();
//   action resume_timer(boot_clock::time_point now);  action resume_cancel();
//   bool stopping(bool cancelled);             checked before each step: cancel the machine
// and, if its waits can be polled with others' (an acquire of a semaphore's or writer's permits,
// poll_group.hpp), the grouped wait and the grouped read, taken only while `polled()`:
//   bool polled() const;   awaitable<action> wait_polled(boot_clock::time_point at);
//   bool reads_polled() const;   awaitable<polled_doc> read_polled(const fsm_call&);
// An adapter without them (a release) compiles to the path below without the branches.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <concepts>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>

#include "engine/poll_group.hpp"
#include "engine/store_ops.hpp"
#include "model/clocks.hpp"
#include "model/lock_document.hpp"

namespace mongolock::detail {

enum class driver_step { call, wait, done };

// One store call a machine asks for, in the store's terms.
inline const std::string no_string;

struct fsm_call {
  enum class op { read, take, release, join_line, refresh_line };
  op what = op::read;
  // The machine's or the lease's own strings, which outlive the call: not copied per call (the
  // store's operation copies what it sends to the worker).
  const std::string* name = &no_string;
  const std::string* owner = &no_string;
  std::int64_t number = 0;  // release: the token; join_line, refresh_line: the ticket
  take_request request;     // take
  deadline_t deadline;
  // take: the reply of a take the driver stopped waiting for (store_ops::take).
  std::function<void(outcome<bool>)> on_abandoned;
  boot_clock::time_point sent{};  // when the adapter built it: the request leaves now
};

// What the call answered, and when: `doc` for a read, `wrote` for the others.
struct fsm_reply {
  outcome<lock_doc> doc;
  outcome<bool> wrote;
  boot_clock::time_point sent{}, received{};
};

namespace driver_detail {
template <class M>
concept polls = requires(M& m, const fsm_call& c, boot_clock::time_point at) {
  { m.polled() } -> std::convertible_to<bool>;
  { m.reads_polled() } -> std::convertible_to<bool>;
  m.wait_polled(at);
  m.read_polled(c);
};

// The call in a frame of its own, sized for it: the request and the reply live only while the
// call is in flight (bench/ scenario 4: 10,000 waiters, each in a frame of its own). The reply is
// built in this frame and moved once, into the machine's input: one frame and no copy per call
// (an uncontended cycle's instructions, docs/benchmarks.md).
template <class M>
boost::asio::awaitable<void> call_step(M& m, typename M::action& a) {
  // Majority reads only (docs/design.md section 3). Each call is named before its co_await,
  // never a temporary inside it (GCC 12: TOOLCHAIN.md).
  auto c = m.call(a);
  fsm_reply reply;
  reply.sent = c.sent;
  auto& ops = m.ops();
  switch (c.what) {
    case fsm_call::op::read: {
      auto op = ops.read(*c.name, read_mode::majority, c.deadline);
      reply.doc = co_await std::move(op);
      break;
    }
    case fsm_call::op::take: {
      auto op = ops.take(c.request, c.deadline, std::move(c.on_abandoned));
      reply.wrote = co_await std::move(op);
      break;
    }
    case fsm_call::op::release: {
      auto op = ops.release(*c.name, *c.owner, c.number, c.deadline);
      reply.wrote = co_await std::move(op);
      break;
    }
    case fsm_call::op::join_line: {
      auto op = ops.join_line(*c.name, *c.owner, c.number, c.deadline);
      reply.wrote = co_await std::move(op);
      break;
    }
    case fsm_call::op::refresh_line: {
      auto op = ops.refresh_line(*c.name, *c.owner, c.number, c.deadline);
      reply.wrote = co_await std::move(op);
      break;
    }
  }
  reply.received = boot_clock::now();
  a = m.resume(a, reply);
}

// A read of a group's wait woken with the others (poll_group.hpp): it goes out in their one find
// and comes back with that find's receive time (docs/design.md section 10). A frame of its own, so
// call_step's stays as small as it was.
template <class M>
boost::asio::awaitable<void> polled_read_step(M& m, typename M::action& a) {
  auto c = m.call(a);
  if (c.what != fsm_call::op::read) std::abort();  // reads_polled() holds only until the read
  fsm_reply reply;
  reply.sent = c.sent;
  auto polled = m.read_polled(c);
  auto got = co_await std::move(polled);
  reply.doc = outcome<lock_doc>{got.ec, std::move(got.message), false, std::move(got.value)};
  reply.received = got.received.value_or(boot_clock::now());
  a = m.resume(a, reply);
}

template <class M>
concept waits = requires(M& m, const typename M::action& a) {
  m.timer();
  m.wait_until(a);
  m.stopping(true);
};
}  // namespace driver_detail

template <class M>
boost::asio::awaitable<typename M::action> drive(M& m, typename M::action a) {
  namespace asio = boost::asio;
  for (;;) {
    const auto step = m.step(a);
    if (step == driver_step::done) co_return a;
    if constexpr (driver_detail::waits<M>) {
      const auto cs = co_await asio::this_coro::cancellation_state;
      if (m.stopping(cs.cancelled() != asio::cancellation_type::none)) {
        a = m.resume_cancel();
        continue;
      }
    }
    if (step == driver_step::call) {
      if constexpr (driver_detail::polls<M>) {
        if (m.reads_polled()) {
          auto read = driver_detail::polled_read_step(m, a);
          co_await std::move(read);
          continue;
        }
      }
      // Named, not a temporary inside co_await: GCC 12 may destroy that twice.
      auto call = driver_detail::call_step(m, a);
      co_await std::move(call);
      continue;
    }
    if constexpr (driver_detail::waits<M>) {
      const auto at = m.wait_until(a);
      if constexpr (driver_detail::polls<M>) {
        // One of a group's waits: woken with the others at the earliest `at` of them
        // (poll_group.hpp); the adapter resumes its machine as the wake says. Already due too
        // (the look after a refresh of its entry in the line): the group wakes it at once, with
        // every other wait, so their looks go out in one find instead of one read each.
        if (m.polled()) {
          auto polled = m.wait_polled(at);
          a = co_await std::move(polled);
          continue;
        }
      }
      // Already due (a refresh of our entry in the line, say): no timer, no round through the
      // reactor.
      if (const auto now = boot_clock::now(); at <= now) {
        a = m.resume_timer(now);
        continue;
      }
      auto& timer = m.timer();
      timer.expires_at(at);
      auto [waited] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      a = waited ? m.resume_cancel() : m.resume_timer(boot_clock::now());
    } else {
      std::abort();  // a machine that never waits (a release) asks for no wait
    }
  }
}

}  // namespace mongolock::detail
