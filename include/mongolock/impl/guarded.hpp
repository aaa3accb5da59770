#pragma once
// The body every guard runs (lease::async_guard, multi_lease::async_guard, leadership's): the
// work beside a wait for the end of what guards it. Implementation; include a public header.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <tuple>
#include <type_traits>

#include "mongolock/detail/asio_compat.hpp"

namespace mongolock::detail {

// A guard completes as the co_spawn that runs it: void(exception_ptr[, T]).
template <class T>
using guard_signature = typename spawn_signature_of<T>::type;

// The body of every guard: `work` (spawned on `work_ex`) next to `ended`, a deferred operation
// that completes with void(error_code) when the lease (or one of several) ends; whichever ends
// first cancels the other. An end first rethrows as system_error(its code).
template <class T, class Ended>
boost::asio::awaitable<T> guarded(boost::asio::awaitable<T> work, boost::asio::any_io_executor work_ex, Ended ended) {
  namespace asio = boost::asio;
  // Built outside the co_await expression: GCC 12 may destroy temporaries there twice.
  auto group = asio::experimental::make_parallel_group(co_spawn_relayed(work_ex, std::move(work), asio::deferred),
                                                       std::move(ended));
  auto both = std::move(group).async_wait(asio::experimental::wait_for_one(), asio::deferred);
  auto result = co_await std::move(both);
  const auto& order = std::get<0>(result);
  const std::exception_ptr& failure = std::get<1>(result);
  const boost::system::error_code& end = std::get<std::tuple_size_v<decltype(result)> - 1>(result);
  if (order[0] == 1) throw boost::system::system_error(end);
  if (failure) std::rethrow_exception(failure);
  if constexpr (!std::is_void_v<T>) co_return std::move(std::get<2>(result));
}
}  // namespace mongolock::detail
