#pragma once
// Leader election on one lock name (provider::create_election), as etcd's concurrency.Election:
// campaign (candidate(value), acquired as any lock is: wait to become leader, then show a value
// such as an address), observe (the leaders as they change: owner, value, term), resign. The
// leader holds the name's lease: it renews itself, and a leader that loses it learns so (guarded
// work cancelled, async_wait_lost) before anyone else can win. The term is the lease's fencing
// token, so it only ever increases.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mongolock/error.hpp"
#include "mongolock/detail/acquire_surface.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/limits.hpp"
#include "mongolock/lock.hpp"

namespace mongolock {

// A leader as the lock document shows it.
struct leader_info {
  bool has_leader = false;  // a holder that has proclaimed its value (campaign completed)
  std::string value;
  std::int64_t term = 0;    // the leader's fencing token; 0 without a leader
  std::string owner;        // the leader's owner id (new every term)
  bool operator==(const leader_info&) const = default;
};

// Being the leader: a lease plus the value it proclaimed. Move-only. Thread safety: as lease;
// value() is not safe against an async_proclaim in flight. held(), async_wait_lost and
// async_guard are the leader's lease's (detail/lease_surface.hpp); async_resign is its release.
class leadership : public detail::lease_surface<leadership, lease> {
 public:
  leadership() noexcept = default;
  leadership(leadership&&) noexcept = default;
  leadership& operator=(leadership&&) noexcept = default;

  explicit operator bool() const noexcept { return static_cast<bool>(lease_); }
  // {} while leading; errc::lease_lost, errc::released (resigned) or errc::not_held.
  boost::system::error_code status() const noexcept { return lease_.status(); }
  std::int64_t term() const noexcept { return lease_.fencing_token(); }
  const std::string& value() const noexcept {
    static const std::string none;
    return value_ ? *value_ : none;  // a moved-from leadership has none
  }
  // The underlying lease (its strand, owner id, fencing token, time left).
  const lease& get_lease() const noexcept { return lease_; }

  // Replaces the value observers see, keeping the term. Completion: void(error_code): {};
  // errc::lease_lost if this is no longer the leader (errc::released after async_resign);
  // errc::invalid_options for an empty value,
  // one above limits::max_election_value bytes or not UTF-8; errc::not_held when empty; server
  // errors. Cancellation: not supported.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_proclaim(std::string value, Token&& token = {}) {
    return proclaim(std::move(value), nullptr, std::forward<Token>(token));
  }
  // The same, with the reason for a failure in `d`.
  template <class Token = boost::asio::deferred_t>
  auto async_proclaim(std::string value, diagnostics& d, Token&& token = {}) {
    return proclaim(std::move(value), &d, std::forward<Token>(token));
  }
  // Steps down: releases the lease (lease::async_release's completion and errors).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_resign(Token&& token = {}) {
    return this->async_release(std::forward<Token>(token));
  }
  // The same, with the reason for a failure in `d` (lease::async_release(diagnostics&)).
  template <class Token = boost::asio::deferred_t>
  auto async_resign(diagnostics& d, Token&& token = {}) {
    return this->async_release(d, std::forward<Token>(token));
  }

 private:
  friend class election;
  friend class detail::lease_surface<leadership, lease>;
  // A leader resigns (async_resign); the release keeps the name it has for a lock.
  using detail::lease_surface<leadership, lease>::async_release;
  const lease& held_object() const noexcept { return lease_; }
  using handler_ec = boost::asio::any_completion_handler<void(boost::system::error_code)>;
  leadership(lease l, std::string value) : lease_(std::move(l)), value_(std::make_shared<std::string>(std::move(value))) {}
  boost::asio::any_io_executor lease_executor() const;
  // What a proclaim writes for: the lease's state (null when empty) and the value it shows.
  struct target {
    std::shared_ptr<detail::lease_state> lease;
    std::shared_ptr<std::string> shown;
  };
  target proclaim_target() const;
  static void start_proclaim(target t, std::string value, diagnostics* d, handler_ec h);
  template <class Token>
  auto proclaim(std::string value, diagnostics* d, Token&& token) {
    // The target is taken now, by value: a deferred operation may start after this object was
    // moved from or reassigned.
    return detail::async_op<void(boost::system::error_code)>(
        detail::initiation(lease_executor(),
                           [](auto h, target t, std::string v, diagnostics* diag) {
                             start_proclaim(std::move(t), std::move(v), diag, std::move(h));
                           }),
        token, proclaim_target(), std::move(value), d);
  }

  lease lease_;
  // Shared with a proclaim in flight, which replaces it on success.
  std::shared_ptr<std::string> value_ = std::make_shared<std::string>();
};

// Made by provider::create_election. A name plus its provider, as lock; copy freely. Handlers
// default to the provider's executor.
class election {
 public:
  const std::string& name() const noexcept { return lock_.name(); }

  // This process's candidacy for leader, proclaiming `value` (an address, say) once it wins: a view
  // with the acquire set (candidate_view). No server call until acquired; copy freely.
  class candidate_view;
  candidate_view candidate(std::string value) const;

  // One primary read: the current leader. Completion: void(error_code, leader_info). Errors:
  // errc::invalid_name, the store's (errc::server_unavailable, errc::server_error, ...).
  // Cancellation: terminal (the read has no side effect).
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_leader(Token&& token = {}) {
    return leader(nullptr, std::forward<Token>(token));
  }
  // The same, with the reason for a failure in `d`.
  template <class Token = boost::asio::deferred_t>
  auto async_leader(diagnostics& d, Token&& token = {}) {
    return leader(&d, std::forward<Token>(token));
  }

  // The leaders as they change, polled every `every` (0: a tenth of the provider's expiry).
  class observer;
  observer observe(std::chrono::milliseconds every = std::chrono::milliseconds{0}) const;

 private:
  friend class provider;
  using campaign_handler = boost::asio::any_completion_handler<void(boost::system::error_code, leadership)>;
  using leader_handler = boost::asio::any_completion_handler<void(boost::system::error_code, leader_info)>;
  explicit election(lock l) : lock_(std::move(l)) {}

  static void start_campaign(lock l, std::string value, detail::acquire_mode mode,
                             std::optional<std::chrono::milliseconds> timeout, diagnostics* d, campaign_handler h);
  static void start_leader(lock l, diagnostics* d, leader_handler h);
  static boost::asio::any_io_executor executor_of(const lock& l) noexcept;

  template <class Token>
  auto leader(diagnostics* d, Token&& token) {
    return detail::async_op<void(boost::system::error_code, leader_info)>(
        detail::initiation(executor_of(lock_),
                           [](auto h, lock l, diagnostics* diag) { start_leader(std::move(l), diag, std::move(h)); }),
        token, lock_, d);
  }

  lock lock_;
};

// A campaign: the acquire set (detail/acquire_surface.hpp) over the election's lock, completing
// with void(error_code, leadership): the lock's acquire (async_acquire waits within the
// provider's acquire timeout, async_acquire_for(0) and async_try_acquire look once), then the
// proclaim of the value. Extra errors: errc::invalid_options for an empty value, one above
// limits::max_election_value bytes or not valid UTF-8 (before any server call); errc::lease_lost
// for a lease lost before the value was written (the lock is released). A try's `within` bounds
// the acquire (the proclaim after it is bounded by the driver's timeouts); with
// confirm_silent_holder it watches a long-silent leader and takes over once its expiry is
// observed. Cancellation: as lock's.
class election::candidate_view : public detail::acquire_surface<candidate_view, leadership> {
 public:
  const std::string& value() const noexcept { return value_; }

 private:
  friend class election;
  friend class detail::acquire_surface<candidate_view, leadership>;
  candidate_view(lock l, std::string value) : lock_(std::move(l)), value_(std::move(value)) {}
  template <class Token>
  auto start(detail::acquire_request r, diagnostics* d, Token&& token) const {
    return detail::async_op<void(boost::system::error_code, leadership)>(
        detail::initiation(executor_of(lock_),
                           [](auto h, lock l, std::string v, detail::acquire_mode mode,
                              std::optional<std::chrono::milliseconds> t, diagnostics* diag) {
                             start_campaign(std::move(l), std::move(v), mode, t, diag, std::move(h));
                           }),
        token, lock_, value_, r.mode, r.timeout, d);
  }

  lock lock_;
  std::string value_;
};

inline election::candidate_view election::candidate(std::string value) const {
  return candidate_view(lock_, std::move(value));
}

// An async stream of leader changes. The first async_next completes with the leader of the
// moment; each later one when the document shows a different leader_info (a new term, a new
// value, or no leader: resigned, or taken over by a campaign that has not proclaimed yet). A
// leader that died keeps showing until a campaign takes over after its expiry. Changes between
// two polls may be missed (each call reports the latest state). Not thread-safe; one
// async_next at a time. Cancellation: terminal, partial and total: operation_aborted.
class election::observer {
 public:
  // Completion: void(error_code, leader_info). Errors: errc::invalid_name, the store's
  // (errc::server_unavailable, ...), operation_aborted when cancelled.
  template <class Token = boost::asio::deferred_t>
    requires detail::is_token_v<Token>
  auto async_next(Token&& token = {}) {
    return next(nullptr, std::forward<Token>(token));
  }
  // The same, with the reason for a failure in `d`.
  template <class Token = boost::asio::deferred_t>
  auto async_next(diagnostics& d, Token&& token = {}) {
    return next(&d, std::forward<Token>(token));
  }

 private:
  friend class election;
  observer(lock l, std::chrono::milliseconds every) : lock_(std::move(l)), every_(every) {}
  static void start_next(lock l, std::chrono::milliseconds every, std::shared_ptr<std::optional<leader_info>> last,
                         diagnostics* d, leader_handler h);
  template <class Token>
  auto next(diagnostics* d, Token&& token) {
    // By value (the lock is a name and a pointer): a deferred operation may start after this
    // object was moved or destroyed.
    return detail::async_op<void(boost::system::error_code, leader_info)>(
        detail::initiation(executor_of(lock_),
                           [](auto h, lock l, std::chrono::milliseconds every,
                              std::shared_ptr<std::optional<leader_info>> last, diagnostics* diag) {
                             start_next(std::move(l), every, std::move(last), diag, std::move(h));
                           }),
        token, lock_, every_, last_, d);
  }

  lock lock_;
  std::chrono::milliseconds every_;
  // The last leader_info handed out (null before the first): shared with the poll in flight.
  std::shared_ptr<std::optional<leader_info>> last_ = std::make_shared<std::optional<leader_info>>();
};

}  // namespace mongolock
