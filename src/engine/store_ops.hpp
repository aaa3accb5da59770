#pragma once
// The store's operations as the engine calls them: one typed call each, `co_await
// p->ops.read(name, read_mode::majority)`. Each completes on the caller's executor, bounded by
// `deadline` and the handler's cancellation (async_call.hpp), and counts one server call
// (stats::server_calls). The default token is use_awaitable; any other works (a background
// release binds a callback to a strand).
//
// The arguments are copied into the call before it starts, so the caller's strings may go away
// at once. Pass them as named variables, never as temporaries inside a co_await expression: GCC
// 12 may destroy such temporaries twice.
#include <boost/asio/use_awaitable.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/lock_document.hpp"
#include "store/async_call.hpp"
#include "store/lock_store.hpp"

namespace mongolock::detail {

class store_ops {
 public:
  using default_token = boost::asio::use_awaitable_t<>;

  store_ops(boost::asio::any_io_executor ex, std::shared_ptr<lock_store> store, std::atomic<std::uint64_t>& calls)
      : ex_(std::move(ex)), store_(std::move(store)), calls_(calls) {}

  template <class Token = default_token>
  auto prepare(deadline_t deadline = std::nullopt, Token&& token = {}) {
    return run<outcome<server_info>>([s = store_](auto reply) { s->prepare(std::move(reply)); }, deadline,
                                     std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto read(const std::string& name, read_mode mode, deadline_t deadline = std::nullopt, Token&& token = {}) {
    return run<outcome<lock_doc>>([s = store_, name, mode](auto reply) { s->read(name, mode, std::move(reply)); },
                                  deadline, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto read_each(const std::vector<std::string>& names, read_mode mode, deadline_t deadline = std::nullopt,
                 Token&& token = {}) {
    return run<outcome<std::vector<lock_doc>>>(
        [s = store_, names, mode](auto reply) { s->read_each(names, mode, std::move(reply)); }, deadline,
        std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto list(Token&& token = {}) {
    return run<outcome<std::vector<named_doc>>>([s = store_](auto reply) { s->list(std::move(reply)); }, std::nullopt,
                                                std::forward<Token>(token));
  }
  // `on_abandoned`: the reply of a take whose caller stopped waiting (cancelled, or past
  // `deadline`): it may have landed, and must be given back.
  template <class Token = default_token>
  auto take(const take_request& request, deadline_t deadline = std::nullopt,
            std::function<void(outcome<bool>)> on_abandoned = nullptr, Token&& token = {}) {
    return run<outcome<bool>>([s = store_, request](auto reply) { s->take(request, std::move(reply)); }, deadline,
                              std::forward<Token>(token), std::move(on_abandoned));
  }
  template <class Token = default_token>
  auto release(const std::string& name, const std::string& owner, std::int64_t token_value,
               deadline_t deadline = std::nullopt, Token&& token = {}) {
    return run<outcome<bool>>(
        [s = store_, name, owner, token_value](auto reply) { s->release(name, owner, token_value, std::move(reply)); },
        deadline, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                      Token&& token = {}) {
    return run<outcome<std::int64_t>>(
        [s = store_, names, owners](auto reply) { s->release_owners(names, owners, std::move(reply)); },
        std::nullopt, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                 deadline_t deadline = std::nullopt, Token&& token = {}) {
    return run<outcome<bool>>(
        [s = store_, name, owner, ticket](auto reply) { s->join_line(name, owner, ticket, std::move(reply)); },
        deadline, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                    deadline_t deadline = std::nullopt, Token&& token = {}) {
    return run<outcome<bool>>(
        [s = store_, name, owner, ticket](auto reply) { s->refresh_line(name, owner, ticket, std::move(reply)); },
        deadline, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto leave_line(const std::string& name, const std::string& owner, Token&& token = {}) {
    return run<outcome<bool>>([s = store_, name, owner](auto reply) { s->leave_line(name, owner, std::move(reply)); },
                              std::nullopt, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto proclaim(const std::string& name, const std::string& owner, std::int64_t token_value, const std::string& value,
                Token&& token = {}) {
    return run<outcome<bool>>([s = store_, name, owner, token_value, value](auto reply) {
      s->proclaim(name, owner, token_value, value, std::move(reply));
    }, std::nullopt, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto record_run(const std::string& name, const std::string& owner, std::int64_t token_value, Token&& token = {}) {
    return run<outcome<bool>>([s = store_, name, owner, token_value](auto reply) {
      s->record_run(name, owner, token_value, std::move(reply));
    }, std::nullopt, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto declare(const std::string& name, const declaration& mine, deadline_t deadline = std::nullopt, Token&& token = {}) {
    return run<outcome<declaration>>([s = store_, name, mine](auto reply) { s->declare(name, mine, std::move(reply)); },
                                     deadline, std::forward<Token>(token));
  }
  template <class Token = default_token>
  auto force_release(const std::string& name, bool immediate, Token&& token = {}) {
    return run<outcome<std::string>>(
        [s = store_, name, immediate](auto reply) { s->force_release(name, immediate, std::move(reply)); },
        std::nullopt, std::forward<Token>(token));
  }

 private:
  template <class R, class Token>
  auto run(store_call<R> start, deadline_t deadline, Token&& token, std::function<void(R)> on_abandoned = nullptr) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    return async_call<R>(ex_, std::move(start), std::move(on_abandoned), deadline, std::forward<Token>(token));
  }

  boost::asio::any_io_executor ex_;
  std::shared_ptr<lock_store> store_;
  std::atomic<std::uint64_t>& calls_;
};

}  // namespace mongolock::detail
