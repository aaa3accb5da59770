// Leader election: a campaign is the lock's acquire followed by one update that writes the
// leader's value, matched on its (owner, token); observers read the document.
#include "mongolock/election.hpp"
#include "model/clocks.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "model/utf8.hpp"
#include "primitives/compose.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;
using detail::outcome;

namespace {

error_code check_value(const std::string& v, std::string& why) {
  if (v.empty()) why = "an election value must not be empty";
  else if (v.size() > limits::max_election_value)
    why = "an election value takes at most " + std::to_string(limits::max_election_value) + " bytes, not " +
          std::to_string(v.size());
  else if (!detail::valid_utf8(v)) why = "an election value must be valid UTF-8";
  else return {};
  return make_error_code(errc::invalid_options);
}

leader_info to_leader(const detail::lock_doc& d) {
  leader_info l;
  if (!d.exists || d.held.owner.empty() || !d.meta || d.meta->value.empty()) return l;
  l.has_leader = true;
  l.value = d.meta->value;
  l.term = d.held.token;
  l.owner = d.held.owner;
  return l;
}

using campaign_result = std::tuple<error_code, leadership>;

}  // namespace

// ---- election -------------------------------------------------------------------------------

asio::any_io_executor election::executor_of(const lock& l) noexcept { return detail::engine_ref(l).executor(); }

void election::start_campaign(lock l, std::string value, detail::acquire_mode mode,
                              std::optional<std::chrono::milliseconds> timeout, diagnostics* d, campaign_handler h) {
  auto strand = asio::make_strand(executor_of(l));
  auto body = [](lock l, std::string value, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout,
                 diagnostics* d) -> asio::awaitable<campaign_result> {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    std::string why;
    if (auto ec = check_value(value, why)) {
      if (d) d->reason = why;
      co_return campaign_result{ec, leadership{}};
    }
    diagnostics inner;
    auto acquire = detail::acquire(l, mode, timeout, &inner, asio::as_tuple(asio::use_awaitable));
    auto [ec, won] = co_await std::move(acquire);
    if (ec) {
      if (d) d->reason = inner.reason;
      co_return campaign_result{ec, leadership{}};
    }
    auto write = detail::write_value(detail::state_of(won), value);
    auto r = co_await std::move(write);
    if (r.ec || !r.value) {
      // Not the leader observers would see: give the lock back rather than lead silently.
      auto release = won.async_release(asio::as_tuple(asio::use_awaitable));
      co_await std::move(release);
      if (d) d->reason = r.ec ? r.message : "the lease was lost before the leader's value was written";
      co_return campaign_result{r.ec ? r.ec : make_error_code(errc::lease_lost), leadership{}};
    }
    // Lost while the value was being written, or past its deadline (a process woken from a pause
    // may run the write's reply before the watchdog): not a leadership to hand out.
    if (won.time_left() <= std::chrono::milliseconds{0}) {  // 0 too for a lease no longer held
      if (d)
        d->reason = won.held() ? "the lease ran out (its deadline passed) before the value's write was answered"
                               : "the lease was lost while the leader's value was being written";
      co_return campaign_result{make_error_code(errc::lease_lost), leadership{}};
    }
    if (d) d->reason.clear();
    co_return campaign_result{error_code{}, leadership(std::move(won), std::move(value))};
  };
  detail::spawn_op(strand, body(std::move(l), std::move(value), mode, timeout, d), std::move(h));
}

namespace {
// A failure of an election's read, with its reason into `d` (if given); a success clears it.
std::tuple<error_code, leader_info> read_failed(diagnostics* d, error_code ec, std::string why) {
  if (d) d->reason = std::move(why);
  return {ec, leader_info{}};
}
}  // namespace

void election::start_leader(lock l, diagnostics* d, leader_handler h) {
  const detail::engine_ref e(l);
  auto strand = asio::make_strand(e.executor());
  auto body = [](detail::engine_ref e, std::string name,
                 diagnostics* d) -> asio::awaitable<std::tuple<error_code, leader_info>> {
    std::string why;
    if (auto ec = validate_lock_name(name, &why)) co_return read_failed(d, ec, why);
    auto read = e.read(name);
    auto r = co_await std::move(read);
    if (r.ec) co_return read_failed(d, r.ec, "reading the leader of '" + name + "': " + r.message);
    if (d) d->reason.clear();
    co_return std::tuple{r.ec, to_leader(r.value)};
  };
  detail::spawn_op(strand, body(e, l.name(), d), std::move(h));
}

election::observer election::observe(std::chrono::milliseconds every) const {
  if (every.count() <= 0) {
    every = std::max(std::chrono::milliseconds{10}, detail::engine_ref(lock_).expiry() / 10);
  }
  return observer(lock_, every);
}

void election::observer::start_next(lock l, std::chrono::milliseconds every,
                                    std::shared_ptr<std::optional<leader_info>> last, diagnostics* d, leader_handler h) {
  const detail::engine_ref e(l);
  auto strand = asio::make_strand(e.executor());
  auto body = [](detail::engine_ref e, std::string name, std::chrono::milliseconds every,
                 std::shared_ptr<std::optional<leader_info>> last,
                 diagnostics* d) -> asio::awaitable<std::tuple<error_code, leader_info>> {
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    std::string why;
    if (auto ec = validate_lock_name(name, &why)) co_return read_failed(d, ec, why);
    auto ex = co_await asio::this_coro::executor;  // named: GCC 12 and co_await in constructor arguments
    detail::steady_timer timer(ex);
    // A cancellation that came while no operation of ours could take it (between a timer's
    // completion and this coroutine's resumption) is only recorded: asked after every wait.
    const auto cancelled = []() -> asio::awaitable<bool> {
      co_return (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
    };
    for (bool first = true;; first = false) {
      if (!first) {
        timer.expires_after(every);
        auto [waited] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (waited || co_await cancelled())
          co_return read_failed(d, asio::error::operation_aborted, "cancelled while waiting for the next poll");
      }
      auto read = e.read(name);
      auto r = co_await std::move(read);
      if (r.ec) co_return read_failed(d, r.ec, "polling the leader of '" + name + "': " + r.message);
      if (co_await cancelled()) co_return read_failed(d, asio::error::operation_aborted, "cancelled while polling");
      auto now = to_leader(r.value);
      if (!*last || **last != now) {
        *last = now;
        if (d) d->reason.clear();
        co_return std::tuple{error_code{}, std::move(now)};
      }
    }
  };
  detail::spawn_op(strand, body(e, l.name(), every, std::move(last), d), std::move(h));
}

// ---- leadership ------------------------------------------------------------------------------

asio::any_io_executor leadership::lease_executor() const {
  if (!lease_) return asio::system_executor();
  return lease_.get_executor();
}

leadership::target leadership::proclaim_target() const { return {detail::state_of(lease_), value_}; }

void leadership::start_proclaim(target t, std::string value, diagnostics* d, handler_ec h) {
  auto st = std::move(t.lease);
  std::string why = "this leadership holds no lease";
  auto ec = st ? check_value(value, why) : make_error_code(errc::not_held);
  auto strand = st ? detail::strand_of(*st) : asio::make_strand(asio::any_io_executor(asio::system_executor()));
  auto body = [](std::shared_ptr<detail::lease_state> st, std::shared_ptr<std::string> shown, std::string value,
                 error_code ec, std::string why, diagnostics* d) -> asio::awaitable<std::tuple<error_code>> {
    auto failed = [d](error_code ec, std::string why) {
      if (d) d->reason = std::move(why);
      return std::tuple{ec};
    };
    if (ec) co_return failed(ec, std::move(why));
    if (auto over = detail::ended(*st))  // ended already: nothing to write
      co_return failed(over, over == errc::released ? "the leadership was resigned: nothing to proclaim"
                                                    : "the leader's lease was lost: nothing to proclaim");
    auto write = detail::write_value(st, value);
    auto r = co_await std::move(write);
    if (r.ec) co_return failed(r.ec, "writing the leader's value: " + r.message);
    if (!r.value) co_return failed(make_error_code(errc::lease_lost), "the lease no longer holds the name: the value was not written");
    *shown = std::move(value);
    if (d) d->reason.clear();
    co_return std::tuple{error_code{}};
  };
  if (!t.shown) t.shown = std::make_shared<std::string>();  // a moved-from leadership
  detail::spawn_op(strand, body(std::move(st), std::move(t.shown), std::move(value), ec, std::move(why), d), std::move(h),
                   false);
}

}  // namespace mongolock
