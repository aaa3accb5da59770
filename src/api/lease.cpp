#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <limits>

#include "engine/lease_state.hpp"
#include "model/clocks.hpp"
#include "mongolock/lease.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;
using detail::lease_phase;
using detail::lease_state;

lease& lease::operator=(lease&& other) noexcept {
  if (this != &other) {
    abandon(std::move(state_));
    state_ = std::move(other.state_);
  }
  return *this;
}

lease::~lease() { abandon(std::move(state_)); }

// Released in the background, on the lease's strand.
void lease::abandon(state_ptr st) noexcept {
  if (!st) return;
  try {
    auto strand = st->strand;
    asio::post(strand, [st = std::move(st)] { st->release_in_background(); });
  } catch (...) {
    // Out of memory while posting: the lease simply expires on the server.
  }
}

error_code lease::status() const noexcept { return state_ ? status_of(*state_) : make_error_code(errc::not_held); }

std::chrono::milliseconds lease::time_left() const noexcept {
  if (!state_ || status()) return std::chrono::milliseconds{0};
  const auto left = state_->published_deadline() - detail::boot_clock::now();
  return std::max(std::chrono::milliseconds{0}, std::chrono::floor<std::chrono::milliseconds>(left));
}

std::chrono::milliseconds lease::held_for() const noexcept {
  if (!state_) return std::chrono::milliseconds{0};
  return std::chrono::floor<std::chrono::milliseconds>(detail::boot_clock::now() - state_->acquired_sent);
}

namespace {
const std::string& empty_string() noexcept {
  static const std::string none;
  return none;
}
}  // namespace

const std::string& lease::name() const noexcept { return state_ ? state_->name : empty_string(); }
const std::string& lease::owner_id() const noexcept { return state_ ? state_->owner : empty_string(); }
std::int64_t lease::fencing_token() const noexcept { return state_ ? state_->token : 0; }

asio::strand<asio::any_io_executor> lease::get_executor() const {
  if (!state_) throw boost::system::system_error(make_error_code(errc::not_held));
  return state_->strand;
}

void lease::start_release(state_ptr st, diagnostics* d, handler_ec h) {
  auto strand = st->strand;
  // Not cancellable: a release that stopped half-way would only leave the lock to expire.
  detail::spawn_op<error_code>(strand, detail::release(std::move(st), d), std::move(h), false);
}

void lease::start_release_after(state_ptr st, std::chrono::milliseconds hold, diagnostics* d, handler_ec h) {
  auto strand = st->strand;
  auto body = [](state_ptr s, std::chrono::milliseconds at_least,
                 diagnostics* diag) -> asio::awaitable<std::tuple<error_code>> {
    // Every cancellation type ends the hold, which answers operation_aborted rather than
    // throwing out of the body.
    co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
    co_await asio::this_coro::throw_if_cancelled(false);
    const auto left = at_least - (detail::boot_clock::now() - s->acquired_sent);
    if (left > detail::boot_clock::duration::zero() && !status_of(*s)) {
      // steady_timer stops in a suspend, boot_clock does not: a hold that spans one only lasts
      // longer, which "at least" allows.
      detail::steady_timer hold_over(s->strand, std::chrono::ceil<std::chrono::milliseconds>(left));
      auto group = asio::experimental::make_parallel_group(hold_over.async_wait(asio::deferred),
                                                           wait_lost_deferred(s));
      co_await std::move(group).async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
      // Cancelled: both waits end with operation_aborted, in either order.
      const auto cancelled = (co_await asio::this_coro::cancellation_state).cancelled();
      if (cancelled != asio::cancellation_type::none) {
        if (diag) diag->reason = "the hold was cancelled; the lease is still held";
        co_return make_error_code(asio::error::operation_aborted);
      }
      // Over, or the lease ended during the hold (lost or released): the release says which.
    }
    // From here on a cancellation is too late to leave the lease held, and must not cut the
    // release short (a write half-sent leaves the lock to expire).
    co_await asio::this_coro::reset_cancellation_state([](asio::cancellation_type) { return asio::cancellation_type::none; });
    co_return co_await detail::release(std::move(s), diag);
  };
  detail::spawn_op<error_code>(strand, body(std::move(st), hold, d), std::move(h));
}

void lease::start_record(state_ptr st, diagnostics* d, handler_ec h) {
  auto strand = st->strand;
  auto body = [](state_ptr s, diagnostics* diag) -> asio::awaitable<std::tuple<error_code>> {
    auto fail = [&](error_code ec, std::string why) {
      if (diag) diag->reason = std::move(why);
      return std::tuple<error_code>{ec};
    };
    if (auto ec = status_of(*s))
      co_return fail(ec == errc::released ? make_error_code(errc::not_held) : ec,
                     "the lease has ended: nothing to record under it");
    auto r = co_await s->prov->ops.record_run(s->name, s->owner, s->token);
    if (r.ec) co_return fail(r.ec, r.message);
    if (!r.value) co_return fail(make_error_code(errc::lease_lost), "the lock's document no longer names this lease");
    co_return std::tuple<error_code>{};
  };
  // Not cancellable: one write, whose outcome the caller must learn.
  detail::spawn_op<error_code>(strand, body(std::move(st), d), std::move(h), false);
}

void lease::start_wait_lost(state_ptr st, handler_ec h) {
  auto slot = asio::get_associated_cancellation_slot(h);
  auto ex = asio::get_associated_executor(h, st->strand);
  const auto id = st->next_waiter.fetch_add(1);
  // Assigned here, in the initiating context, so it is serialised with the caller's emits; the
  // registration below is posted first, so a cancellation always finds it on the strand.
  if (slot.is_connected()) {
    slot.assign([weak = std::weak_ptr(st), id](asio::cancellation_type) {
      if (auto s = weak.lock()) asio::post(s->strand, [s, id] { s->cancel_waiter(id); });
    });
  }
  asio::post(st->strand, [st, id, h = std::move(h), slot, ex]() mutable {
    st->add_waiter(id, std::move(h), slot, std::move(ex));
  });
}

asio::strand<asio::any_io_executor> lease::strand_of(const lease_state& s) { return s.strand; }

// The deadline as the strand last published it, on the boot clock the watchdog waits on: past it
// the watchdog is due and the lease as good as lost, whether or not it has run (docs/design.md
// section 6).
error_code lease::ended(const handle& s) noexcept {
  if (auto ec = status_of(*s)) return ec;
  if (detail::boot_clock::now() >= s->published_deadline()) return make_error_code(errc::lease_lost);
  return {};
}

error_code lease::status_of(const lease_state& s) noexcept {
  switch (s.phase.load()) {
    case lease_phase::held: return {};
    case lease_phase::lost: return make_error_code(errc::lease_lost);
    case lease_phase::released: return make_error_code(errc::released);
  }
  return {};
}

}  // namespace mongolock
