// The store calls of fsm_driver.hpp, in one place for every machine it drives.
#include "engine/fsm_driver.hpp"

namespace mongolock::detail {

boost::asio::awaitable<fsm_reply> perform(store_ops& ops, fsm_call c) {
  fsm_reply out;
  out.sent = c.sent;
  switch (c.what) {
    case fsm_call::op::read: {
      auto r = co_await ops.read(c.name, read_mode::majority, c.deadline);
      out.doc = std::move(r);
      break;
    }
    case fsm_call::op::take: {
      auto r = co_await ops.take(c.request, c.deadline, std::move(c.on_abandoned));
      out.wrote = std::move(r);
      break;
    }
    case fsm_call::op::release: {
      auto r = co_await ops.release(c.name, c.owner, c.number, c.deadline);
      out.wrote = std::move(r);
      break;
    }
    case fsm_call::op::join_line: {
      auto r = co_await ops.join_line(c.name, c.owner, c.number, c.deadline);
      out.wrote = std::move(r);
      break;
    }
    case fsm_call::op::refresh_line: {
      auto r = co_await ops.refresh_line(c.name, c.owner, c.number, c.deadline);
      out.wrote = std::move(r);
      break;
    }
  }
  out.received = boot_clock::now();
  co_return out;
}

}  // namespace mongolock::detail
