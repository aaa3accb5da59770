#pragma once
// The coroutine bodies of lease's templates. Implementation: included at the end of
// mongolock/lease.hpp; include that instead.
#include "mongolock/lease.hpp"

namespace mongolock {

// Runs on the lease's strand: `work` (spawned on `work_ex`, the caller's executor) next to a wait
// for loss; whichever ends first cancels the other. Loss (or release) rethrows as
// system_error(errc::lease_lost / errc::released).
template <class T>
boost::asio::awaitable<T> lease::guard_body(state_ptr st, boost::asio::awaitable<T> work,
                                            boost::asio::any_io_executor work_ex) {
  if (auto ec = status_of(*st)) throw boost::system::system_error(ec);
  auto body = detail::guarded<T>(std::move(work), std::move(work_ex), wait_lost(st, boost::asio::deferred));
  if constexpr (std::is_void_v<T>) co_await std::move(body);
  else co_return co_await std::move(body);
}

}  // namespace mongolock
