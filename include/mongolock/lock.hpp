#pragma once
// A named lock: cheap to create, holds no server state until acquired.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "mongolock/initiation.hpp"
#include "mongolock/lease.hpp"

namespace mongolock {
namespace detail {
struct provider_impl;
enum class acquire_mode { wait, try_once };
using acquire_handler = boost::asio::any_completion_handler<void(boost::system::error_code, lease)>;
void start_acquire(std::shared_ptr<provider_impl>, std::string name, acquire_mode,
                   std::optional<std::chrono::milliseconds> timeout, acquire_handler);
boost::asio::any_io_executor provider_executor(const provider_impl&) noexcept;
}  // namespace detail

class lock {
 public:
  lock(std::shared_ptr<detail::provider_impl> p, std::string name) : provider_(std::move(p)), name_(std::move(name)) {}
  const std::string& name() const noexcept { return name_; }

  // Waits until acquired, with jittered backoff; gives up with errc::timeout after the
  // provider's acquire_timeout (0 = never). Other failures: errc::invalid_name,
  // errc::server_unavailable, errc::unsupported_server, errc::server_error.
  // Cancellation: terminal, partial and total, at any point; completes promptly with
  // operation_aborted. A lock the server granted while the call was in flight is released again.
  template <class Token = boost::asio::deferred_t>
  auto async_acquire(Token&& token = {}) {
    return initiate(detail::acquire_mode::wait, std::nullopt, std::forward<Token>(token));
  }

  // As async_acquire, with an explicit timeout for this call (0 = try once). A negative timeout
  // completes with errc::invalid_options.
  template <class Token = boost::asio::deferred_t>
  auto async_acquire_for(std::chrono::milliseconds timeout, Token&& token = {}) {
    return timeout.count() == 0 ? initiate(detail::acquire_mode::try_once, timeout, std::forward<Token>(token))
                                : initiate(detail::acquire_mode::wait, timeout, std::forward<Token>(token));
  }

  // One attempt: completes with errc::busy if another owner holds a live lease.
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire(Token&& token = {}) {
    return initiate(detail::acquire_mode::try_once, std::chrono::milliseconds{0}, std::forward<Token>(token));
  }

 private:
  template <class Token>
  auto initiate(detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, Token&& token) {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, lease)>(
        detail::make_initiation(detail::provider_executor(*provider_),
                                [](auto h, std::shared_ptr<detail::provider_impl> p, std::string n,
                                   detail::acquire_mode m, std::optional<std::chrono::milliseconds> t) {
                                  detail::start_acquire(std::move(p), std::move(n), m, t, std::move(h));
                                }),
        token, provider_, name_, mode, timeout);
  }

  std::shared_ptr<detail::provider_impl> provider_;
  std::string name_;
};

}  // namespace mongolock
