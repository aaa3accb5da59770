// The store calls of fsm_driver.hpp, in one place for every machine it drives.
#include "engine/fsm_driver.hpp"

namespace mongolock::detail {

boost::asio::awaitable<fsm_reply> perform(store_ops& ops, fsm_call c) {
  // Each call named before its co_await, never a temporary inside it (GCC 12: TOOLCHAIN.md).
  fsm_reply out;
  out.sent = c.sent;
  switch (c.what) {
    case fsm_call::op::read: {
      auto op = ops.read(c.name, read_mode::majority, c.deadline);
      auto r = co_await std::move(op);
      out.doc = std::move(r);
      break;
    }
    case fsm_call::op::take: {
      auto op = ops.take(c.request, c.deadline, std::move(c.on_abandoned));
      auto r = co_await std::move(op);
      out.wrote = std::move(r);
      break;
    }
    case fsm_call::op::release: {
      auto op = ops.release(c.name, c.owner, c.number, c.deadline);
      auto r = co_await std::move(op);
      out.wrote = std::move(r);
      break;
    }
    case fsm_call::op::join_line: {
      auto op = ops.join_line(c.name, c.owner, c.number, c.deadline);
      auto r = co_await std::move(op);
      out.wrote = std::move(r);
      break;
    }
    case fsm_call::op::refresh_line: {
      auto op = ops.refresh_line(c.name, c.owner, c.number, c.deadline);
      auto r = co_await std::move(op);
      out.wrote = std::move(r);
      break;
    }
  }
  out.received = boot_clock::now();
  co_return out;
}

}  // namespace mongolock::detail
