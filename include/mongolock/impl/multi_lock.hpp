#pragma once
// The coroutine bodies of multi_lock.hpp's templates. Implementation: included at the end of
// mongolock/multi_lock.hpp; include that instead.
#include "mongolock/multi_lock.hpp"

namespace mongolock {

template <class T>
boost::asio::awaitable<T> multi_lease::guard_body(shared s, boost::asio::awaitable<T> work,
                                                  boost::asio::any_io_executor work_ex) {
  namespace asio = boost::asio;
  for (const auto& l : *s)
    if (auto ec = l.status()) throw boost::system::system_error(ec);
  auto any_lost = asio::async_initiate<decltype(asio::deferred), void(boost::system::error_code)>(
      [](auto h, shared s) { start_wait_lost(std::move(s), std::move(h)); }, asio::deferred, s);
  auto body = detail::guarded<T>(std::move(work), std::move(work_ex), std::move(any_lost));
  if constexpr (std::is_void_v<T>) co_await std::move(body);
  else co_return co_await std::move(body);
}

}  // namespace mongolock
