// The permits of a semaphore or rw_lock (docs/design.md section 10): their names, their declaration,
// and the take of one of them.
#include "primitives/permits.hpp"
#include "model/clocks.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "model/document_name.hpp"
#include "sansio/declare_fsm.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = detail::steady_clock;

namespace {
using permit_result = std::tuple<error_code, lease>;
}  // namespace

std::string permit_name(const std::string& name, int k) { return name + "#" + std::to_string(k); }

error_code check_permits(const semaphore_state& s, std::string* why) {
  if (auto ec = validate_lock_name(s.name, why)) return ec;
  if (s.permits < 1 || s.permits > limits::max_permits) {
    if (why)
      *why = "a " + s.kind + " has 1.." + std::to_string(limits::max_permits) + " permits, not " +
             std::to_string(s.permits);
    return make_error_code(errc::invalid_options);
  }
  // The name is valid, so only the length of the longest permit name can fail.
  std::string reason;
  if (auto ec = validate_document_name(permit_name(s.name, s.permits), &reason)) {
    if (why) *why = "the permit names of '" + s.name + "' are not valid lock names: " + reason;
    return ec;
  }
  return {};
}

// The driver of declare_fsm (src/sansio/declare_fsm.cpp decides): at most one declaration per
// name and process, sent while the name is not known declared.
asio::awaitable<error_code> ensure_declared(std::shared_ptr<semaphore_state> s, std::string& why,
                                            std::optional<steady::time_point> deadline) {
  const declare_fsm check(s->name, declaration{s->kind, s->permits});
  auto a = check.resume(declare_input::start(s->declared.load(std::memory_order_acquire)));
  if (a.what == declare_action::kind::declare) {
    auto op = s->engine.declare(s->name, check.mine(), deadline);
    auto r = co_await std::move(op);
    a = check.resume(declare_input::declared(std::move(r)));
  }
  if (a.ec) {
    why = std::move(a.why);
    co_return a.ec;
  }
  if (a.remember) s->declared.store(true, std::memory_order_release);
  co_return error_code{};
}

asio::awaitable<permit_result> acquire_permit(std::shared_ptr<semaphore_state> s, acquire_mode mode, bool overtake,
                                              std::optional<std::chrono::milliseconds> timeout, diagnostics* d) {
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto deadline = deadline_of(timeout);
  std::string why;
  auto fail = [&](error_code ec) {
    if (d) d->reason = why;
    return permit_result{ec, lease{}};
  };
  auto timed_out = [&] {
    why = "the acquire timeout passed while looking at the permits of '" + s->name + "'";
    return make_error_code(errc::timeout);
  };
  auto declared = ensure_declared(s, why, deadline);
  if (auto ec = co_await std::move(declared)) co_return fail(ec);

  // The first look (docs/design.md section 10): a try of one permit, from a random one (a blind
  // take: an uncontended semaphore costs what a lock does). If it is held, one find of every permit
  // says which look free, and only those are tried: a look at N held permits is three commands (the
  // try's blind take and its read, the find), not a read or two per permit. A try in turn leaves a permit whose line is not empty to its waiters (a
  // newcomer never overtakes them). A confirming try watches each permit in turn instead (a silent
  // holder of any of them may be gone), as a lock's confirming try does.
  const int n = s->permits;
  const int first = static_cast<int>(s->engine.next_seed() % static_cast<std::uint64_t>(n));
  // A try (not waiting) never queues, so it ignores the lines, as a lock's try does; its look is
  // the try's own (a confirming try watches a silent holder of each permit).
  const bool wait = waits(mode);
  const auto look = !wait ? mode : overtake ? acquire_mode::try_once : acquire_mode::try_in_turn;
  diagnostics inner;
  std::vector<int> to_try{first};  // the permits to look at, in this order
  for (std::size_t next = 0; next < to_try.size(); ++next) {
    if (cancelled(co_await asio::this_coro::cancellation_state)) {
      why = "cancelled";
      co_return fail(asio::error::operation_aborted);
    }
    auto& slot = s->slots[static_cast<std::size_t>(to_try[next])];
    const auto within = left_until(deadline);
    if (within && within->count() <= 0) {
      if (wait) co_return fail(timed_out());
      why = try_out_of_time(slot);
      co_return fail(make_error_code(errc::timeout));
    }
    auto op = acquire(slot, look, within, &inner, asio::as_tuple(asio::use_awaitable));
    auto [ec, got] = co_await std::move(op);
    if (!ec) {
      if (d) d->reason.clear();
      co_return permit_result{ec, std::move(got)};
    }
    // No server: a wait goes on to the wait on every permit, which rides the outage out until its
    // deadline as a lock's wait does (docs/design.md section 4); a try fails with it.
    if (ec == errc::server_unavailable && wait) break;
    if (ec != errc::busy) {
      why = permit_reason(slot, inner);
      co_return fail(ec);
    }
    if (next > 0 || n == 1) continue;
    if (mode == acquire_mode::try_confirming) {
      for (int i = 1; i < n; ++i) to_try.push_back((first + i) % n);
      continue;
    }
    auto seen_op = s->engine.read_each(names_of(s->slots), deadline);
    auto seen = co_await std::move(seen_op);
    if (seen.ec == errc::timeout) {
      if (wait) co_return fail(timed_out());
      why = "the try ran out of time while reading the permits of '" + s->name + "'";
      co_return fail(seen.ec);
    }
    if (seen.ec == errc::server_unavailable && wait) break;
    if (seen.ec) {
      why = "reading the permits of '" + s->name + "': " + seen.message;
      co_return fail(seen.ec);
    }
    for (int i = 1; i < n; ++i) {
      const int k = (first + i) % n;
      const auto& doc = seen.value[static_cast<std::size_t>(k)];
      const bool free = !doc.exists || (!doc.declared && doc.held.owner.empty());
      const bool line_clear = look != acquire_mode::try_in_turn || (doc.line.empty() && doc.waiting == 0);
      if (free && line_clear) to_try.push_back(k);
    }
  }
  if (!wait) {
    why = "all " + std::to_string(n) + " permits of '" + s->name + "' are held";
    co_return fail(make_error_code(errc::busy));
  }

  // The wait: on every permit at once, each with the lock's whole waiting machinery. The first to
  // complete cancels the others; a permit granted to one of them in the same moment is released
  // (by its lease's destructor, in the background).
  if (cancelled(co_await asio::this_coro::cancellation_state)) {  // emitted during the last look
    why = "cancelled";
    co_return fail(asio::error::operation_aborted);
  }
  const auto left = left_until(deadline);
  if (left && left->count() <= 0) {
    co_return fail(timed_out());
  }
  std::vector<diagnostics> diags;
  // Each wait starts with a read (the look saw its permit held): one find for all (section 10).
  const auto gathered_reads = s->engine.gather_reads(names_of(s->slots));
  auto group = wait_on_every_permit(*s, left, diags, acquire_mode::wait_looked);
  auto first_done = std::move(group).async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
  auto [order, codes, leases] = co_await std::move(first_done);
  for (auto i : order) {
    if (!codes[i] && leases[i]) {
      if (d) d->reason.clear();
      co_return permit_result{error_code{}, std::move(leases[i])};
    }
  }
  const auto i = order.front();
  why = codes[i] == errc::timeout ? "no permit of '" + s->name + "' came free within the acquire timeout"
                                  : permit_reason(s->slots[i], diags[i]);
  co_return fail(codes[i]);
}

}  // namespace mongolock::detail
