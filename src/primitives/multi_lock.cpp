// multi_lock: the locks of a set taken one by one in byte order of their names, each with the
// single-lock acquire (its waiting, line and hand-off included), and given back on any failure. A
// waiting one first looks at all of them at once, and is done in one round trip if all are free.
#include "mongolock/multi_lock.hpp"
#include "model/clocks.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>

#include "primitives/compose.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

using result = std::tuple<error_code, multi_lease>;

// Checked before anything is taken. Sorts `names` into the order of acquisition.
error_code check_names(std::vector<std::string>& names, std::string& why) {
  if (names.empty()) {
    why = "a multi-lock needs at least one lock name";
    return make_error_code(errc::invalid_options);
  }
  if (names.size() > limits::max_multi_lock_names) {
    why = "a multi-lock takes at most " + std::to_string(limits::max_multi_lock_names) + " names, not " +
          std::to_string(names.size());
    return make_error_code(errc::invalid_options);
  }
  for (const auto& n : names) {
    std::string reason;
    if (auto ec = validate_lock_name(n, &reason)) {
      why = "lock name #" + std::to_string(&n - names.data() + 1) + ": " + reason;
      return ec;
    }
  }
  std::sort(names.begin(), names.end());
  if (auto dup = std::adjacent_find(names.begin(), names.end()); dup != names.end()) {
    why = "the lock name '" + *dup + "' is given twice";
    return make_error_code(errc::invalid_options);
  }
  return {};
}

// Each lock in turn (in the set's order) into `held`, within `deadline`, each in `mode` (a wait,
// or a try's look); stops at the first failure.
asio::awaitable<detail::set_take> take_each(std::vector<lock>& locks, detail::steady_deadline deadline,
                                            detail::acquire_mode mode, std::vector<lease>& held) {
  const bool try_once = mode != detail::acquire_mode::wait;
  detail::set_take r;
  diagnostics inner;
  for (auto& l : locks) {
    if (detail::cancelled(co_await asio::this_coro::cancellation_state)) {
      r.ec = asio::error::operation_aborted;
      r.why = "cancelled";
      break;
    }
    std::chrono::milliseconds left{0};
    if (deadline) {
      left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - detail::steady_clock::now());
      if (left.count() <= 0) {
        r.ec = make_error_code(errc::timeout);
        r.why = try_once ? detail::try_out_of_time(l) : "the multi-lock's acquire timeout passed before lock '" + l.name() + "'";
        break;
      }
    }
    // A wait without a deadline has the lock's own (none); a try without one, no bound of its own.
    const auto timeout = deadline || try_once ? std::optional{left} : std::nullopt;
    // Named, not a temporary inside co_await: GCC 12 may destroy those twice.
    auto op = detail::acquire(l, mode, timeout, &inner, asio::as_tuple(asio::use_awaitable));
    auto [e, got] = co_await std::move(op);
    if (e) {
      r.ec = e;
      r.why = detail::member_reason("lock '" + l.name() + "'", e, inner);
      break;
    }
    held.push_back(std::move(got));
  }
  co_return r;
}

// A waiting multi-lock's first look (docs/design.md section 8): every lock at once, each one try
// that leaves a lock with a line to its waiters and takes the name's turn in this provider
// (section 7), their takes gathered into one command (section 14); the whole set in one round
// trip when all are free. Tries never wait, so no order is needed to rule out a deadlock. Into
// `held` whatever it got; true when that is every lock. Anything less (a busy member, a late
// grant, an error, a cancellation) is left to the ordered wait after the give-back: it meets
// whatever is still true, as it would have without this look.
asio::awaitable<bool> take_all_at_once(std::vector<lock>& locks, detail::steady_deadline deadline,
                                       std::vector<lease>& held) {
  const auto left = detail::left_until(deadline);
  if (left && left->count() <= 0) co_return false;
  const auto gathered = detail::engine_ref(locks.front()).gather(detail::names_of(locks));
  std::vector<diagnostics> diags;  // unused: what is short of the whole set is the ordered wait's
  auto group = detail::acquire_each_at_once(locks, detail::acquire_mode::try_taking_turn, left, diags);
  auto all = std::move(group).async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  auto [order, codes, leases] = co_await std::move(all);
  bool whole = true;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    whole = whole && !codes[i] && leases[i].held();
    if (!codes[i] && leases[i]) held.push_back(std::move(leases[i]));
  }
  co_return whole;
}

asio::awaitable<result> acquire_all(std::vector<lock> locks, detail::acquire_mode mode,
                                    std::optional<std::chrono::milliseconds> timeout, diagnostics* d) {
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto deadline = detail::deadline_of(timeout);
  if (mode == detail::acquire_mode::wait && locks.size() > 1) {
    std::vector<lease> held;
    held.reserve(locks.size());
    auto look = take_all_at_once(locks, deadline, held);
    if (co_await std::move(look)) {
      if (d) d->reason.clear();
      co_return result{error_code{}, detail::make_multi_lease(std::move(held))};
    }
    auto giving_back = detail::give_back(held, deadline);
    co_await std::move(giving_back);
  }
  // A lease taken early may be lost while a later lock is awaited: then the set is not ours, and
  // is taken again from the start, within the same timeout.
  auto take = [&](std::vector<lease>& held) { return take_each(locks, deadline, mode, held); };
  co_return co_await detail::take_whole_set(take, locks.size(), deadline, d);
}

}  // namespace

void multi_lock::start_acquire(lock prototype, std::vector<std::string> names, detail::acquire_mode mode,
                               std::optional<std::chrono::milliseconds> timeout, diagnostics* d, handler h) {
  const detail::engine_ref e(prototype);
  std::string why;
  auto ec = check_names(names, why);
  if (!ec) ec = detail::check_acquire_timeout(timeout, &why);
  auto body = [&] {
    std::vector<lock> locks;
    locks.reserve(names.size());
    for (auto& n : names) locks.push_back(e.make_lock(std::move(n), true));
    // One timeout for the whole set: the provider's unless given.
    return acquire_all(std::move(locks), mode, e.timeout_or_default(timeout), d);
  };
  detail::start_checked(e, ec, why, d, body, std::move(h));
}

asio::any_io_executor multi_lock::executor_of(const lock& l) noexcept { return detail::engine_ref(l).executor(); }

// ---- multi_lease ------------------------------------------------------------------------------

error_code multi_lease::status() const noexcept {
  if (!*this) return make_error_code(errc::not_held);
  for (const auto& l : *leases_)
    if (auto ec = l.status()) return ec;
  return {};
}

error_code multi_lease::ended(const handle& s) noexcept {
  for (const auto& l : *s)
    if (auto ec = lease::ended(lease::handle_of(l))) return ec;
  return {};
}

const std::vector<lease>& multi_lease::leases() const noexcept {
  static const std::vector<lease> none;
  return leases_ ? *leases_ : none;
}

std::int64_t multi_lease::fencing_token(std::string_view name) const noexcept {
  for (const auto& l : leases())
    if (l.name() == name) return l.fencing_token();
  return 0;
}

std::int64_t multi_lease::highest_fencing_token() const noexcept {
  std::int64_t most = 0;
  for (const auto& l : leases()) most = std::max(most, l.fencing_token());
  return most;
}

std::chrono::milliseconds multi_lease::time_left() const noexcept {
  if (!*this) return std::chrono::milliseconds{0};
  auto least = std::chrono::milliseconds::max();
  for (const auto& l : leases()) least = std::min(least, l.time_left());
  return least;
}

void multi_lease::start_release(shared s, diagnostics* d, handler_ec h) {
  auto ex = s->front().get_executor();
  auto body = [](shared s, diagnostics* d) -> asio::awaitable<std::tuple<error_code>> {
    std::vector<diagnostics> diags;
    auto all = detail::release_together(*s, diags);  // one command for the set (section 14)
    auto codes = co_await std::move(all);
    for (std::size_t i = 0; i < codes.size(); ++i) {  // in name order, whatever order they completed in
      if (!codes[i]) continue;
      if (d) d->reason = "lock '" + (*s)[i].name() + "': " + diags[i].reason;
      co_return std::tuple<error_code>{codes[i]};
    }
    if (d) d->reason.clear();
    co_return std::tuple<error_code>{error_code{}};
  };
  detail::spawn_op(ex, body(std::move(s), d), std::move(h), false);
}

void multi_lease::start_wait_lost(shared s, handler_ec h) {
  auto ex = s->front().get_executor();
  auto body = [](shared s) -> asio::awaitable<std::tuple<error_code>> {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    std::vector<decltype(s->front().async_wait_lost(asio::deferred))> ops;
    for (auto& l : *s) ops.push_back(l.async_wait_lost(asio::deferred));
    auto group = asio::experimental::make_parallel_group(std::move(ops));
    auto first = std::move(group).async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
    auto [order, codes] = co_await std::move(first);
    co_return std::tuple<error_code>{codes[order[0]]};
  };
  detail::spawn_op(ex, body(std::move(s)), std::move(h));
}

}  // namespace mongolock
