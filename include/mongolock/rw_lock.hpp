#pragma once
// A reader-writer lock (provider::create_rw_lock): many readers or one writer per name.
//
// Built from locks: NAME's readers share max_readers permits ("NAME#1" .. "NAME#R", as a
// semaphore of R permits: a reader holds one); a writer first takes "NAME#w" (one writer at a
// time), then every permit. So a writer excludes every reader, readers exclude no one but a
// writer, and every part keeps what a lock guarantees: renewal, guarded work cancelled when a
// lease is lost, takeover of a crashed holder's parts by observed expiry. R is declared under
// NAME: a program asking for another R (or for a semaphore of that name) gets
// errc::declaration_mismatch.
//
// Fencing: a writer's token is multi_lease::highest_fencing_token(). It is above the token of
// every reader it excluded (each permit's token rises with each holder) and of every earlier
// writer (which held the same permits). A reader's token orders it only on its own permit.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "mongolock/error.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/detail/with_reason.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/lock.hpp"
#include "mongolock/multi_lock.hpp"
#include "mongolock/semaphore.hpp"

namespace mongolock {

struct rw_options {
  // How many readers may hold the lock at once (1..limits::max_permits); a writer takes as many
  // permits, so this is also what one write acquisition costs in server calls.
  int max_readers = 16;
  // A waiting reader's first look never takes a permit that others (a writer among them) are in
  // line for, so a stream of readers cannot keep a waiting writer out. Off: a reader takes any
  // free permit at once, and readers can starve writers. A try (timeout 0) never queues and
  // ignores the lines either way, as lock::async_try_acquire does.
  bool prefer_writers = true;
};

namespace detail {
struct rw_state;
}  // namespace detail

// Made by provider::create_rw_lock. Cheap to copy; no server state until acquired. Thread
// safety: as lock. Handlers default to the provider's executor.
class rw_lock {
 public:
  const std::string& name() const noexcept;
  const rw_options& options() const noexcept;

  // A read permit, as semaphore::async_acquire (one look at each permit, then a wait on all).
  // Completion: void(error_code, lease). Errors: semaphore::async_acquire's (errc::invalid_options
  // for max_readers outside 1..limits::max_permits). Cancellation: terminal, partial and total.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_acquire_read(Token&& token = {}) {
    return initiate_read(detail::acquire_mode::wait, std::nullopt, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_acquire_read(diagnostics& d, Token&& token = {}) {
    return initiate_read(detail::acquire_mode::wait, std::nullopt, &d, std::forward<Token>(token));
  }
  // With this timeout for the call; 0 = one look (errc::busy).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_acquire_read_for(std::chrono::milliseconds timeout, Token&& token = {}) {
    return initiate_read(detail::mode_for(timeout), timeout, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_acquire_read_for(std::chrono::milliseconds timeout, diagnostics& d, Token&& token = {}) {
    return initiate_read(detail::mode_for(timeout), timeout, &d, std::forward<Token>(token));
  }
  // A try for a read permit, as semaphore::async_try_acquire (its completion, errors and
  // cancellation): one look at each permit, ignoring their lines; errc::busy if every permit is
  // held. With try_options: `within` bounds the call and confirm_silent_holder lets each look
  // watch a long-silent holder (errc::timeout if `within` ran out before every permit was looked at).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_try_acquire_read(Token&& token = {}) {
    return initiate_read(detail::acquire_mode::try_once, std::nullopt, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire_read(diagnostics& d, Token&& token = {}) {
    return initiate_read(detail::acquire_mode::try_once, std::nullopt, &d, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_try_acquire_read(try_options o, Token&& token = {}) {
    return initiate_read(detail::try_mode(o.confirm_silent_holder), o.within, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire_read(try_options o, diagnostics& d, Token&& token = {}) {
    return initiate_read(detail::try_mode(o.confirm_silent_holder), o.within, &d, std::forward<Token>(token));
  }

  // The write lock: "NAME#w", then every permit at once (each waited for as lock::async_acquire
  // does), within one timeout for the whole (the provider's acquire timeout unless given).
  // Completion: void(error_code, multi_lease) with the leases of "NAME#w" and of every permit;
  // fence with highest_fencing_token(). On any failure everything taken is released before
  // completion; a part lost while the others are awaited makes it release all and start over.
  // Errors: lock::async_acquire's, invalid_options, invalid_name, declaration_mismatch.
  // Cancellation: terminal, partial and total.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_acquire_write(Token&& token = {}) {
    return initiate_write(detail::acquire_mode::wait, std::nullopt, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_acquire_write(diagnostics& d, Token&& token = {}) {
    return initiate_write(detail::acquire_mode::wait, std::nullopt, &d, std::forward<Token>(token));
  }
  // With this timeout for the whole; 0 = one look at each part (errc::busy if any is held).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_acquire_write_for(std::chrono::milliseconds timeout, Token&& token = {}) {
    return initiate_write(detail::mode_for(timeout), timeout, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_acquire_write_for(std::chrono::milliseconds timeout, diagnostics& d, Token&& token = {}) {
    return initiate_write(detail::mode_for(timeout), timeout, &d, std::forward<Token>(token));
  }
  // A try for the write lock: one look at "NAME#w", then at each permit in order, stopping at the
  // first held (everything taken is given back). Completion: void(error_code, multi_lease).
  // Errors: errc::busy if any part is held (also a confirmation cut short by `within`),
  // errc::timeout if `within` ran out before every part was looked at (the reason names the
  // first not looked at), async_acquire_write's others. With try_options: `within` bounds the
  // call, confirm_silent_holder lets each look watch a long-silent holder (lock::async_try_acquire).
  // Cancellation: terminal, partial and total.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_try_acquire_write(Token&& token = {}) {
    return initiate_write(detail::acquire_mode::try_once, std::nullopt, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire_write(diagnostics& d, Token&& token = {}) {
    return initiate_write(detail::acquire_mode::try_once, std::nullopt, &d, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_try_acquire_write(try_options o, Token&& token = {}) {
    return initiate_write(detail::try_mode(o.confirm_silent_holder), o.within, nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_try_acquire_write(try_options o, diagnostics& d, Token&& token = {}) {
    return initiate_write(detail::try_mode(o.confirm_silent_holder), o.within, &d, std::forward<Token>(token));
  }

 private:
  friend class provider;
  using shared = std::shared_ptr<detail::rw_state>;
  using read_handler = boost::asio::any_completion_handler<void(boost::system::error_code, lease)>;
  using write_handler = boost::asio::any_completion_handler<void(boost::system::error_code, multi_lease)>;
  rw_lock(const lock& prototype, std::string name, rw_options o);

  static boost::asio::any_io_executor executor_of(const shared&) noexcept;
  static void start_read(shared, detail::acquire_mode, std::optional<std::chrono::milliseconds>, diagnostics*,
                         read_handler);
  static void start_write(shared, detail::acquire_mode, std::optional<std::chrono::milliseconds>, diagnostics*,
                          write_handler);

  // use_awaitable and use_future throw with the reason in what() (detail/with_reason.hpp).
  template <class Token>
  auto initiate_read(detail::acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                     Token&& token) const {
    return detail::initiate_maybe_with_reason<lease>(std::forward<Token>(token), d, [self = *this, m, timeout](diagnostics* dd, auto&& tok) {
      return self.initiate_read_plain(m, timeout, dd, std::forward<decltype(tok)>(tok));
    });
  }
  template <class Token>
  auto initiate_write(detail::acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                      Token&& token) const {
    return detail::initiate_maybe_with_reason<multi_lease>(std::forward<Token>(token), d, [self = *this, m, timeout](diagnostics* dd, auto&& tok) {
      return self.initiate_write_plain(m, timeout, dd, std::forward<decltype(tok)>(tok));
    });
  }
  template <class Token>
  auto initiate_read_plain(detail::acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                           Token&& token) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, lease)>(
        detail::initiation(executor_of(state_),
                           [](auto h, shared s, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> t,
                              diagnostics* diag) { start_read(std::move(s), mode, t, diag, std::move(h)); }),
        token, state_, m, timeout, d);
  }
  template <class Token>
  auto initiate_write_plain(detail::acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                            Token&& token) const {
    return boost::asio::async_initiate<Token, void(boost::system::error_code, multi_lease)>(
        detail::initiation(executor_of(state_),
                           [](auto h, shared s, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> t,
                              diagnostics* diag) { start_write(std::move(s), mode, t, diag, std::move(h)); }),
        token, state_, m, timeout, d);
  }

  shared state_;
};

}  // namespace mongolock
