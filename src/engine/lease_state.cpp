// A held lease: its renewal loop, its watchdog, its end and the waits for its loss.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <limits>

#include "engine/lease_state.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

void lease_state::start() {
  if (phase != lease_phase::held) return;  // ended (a shutdown) before it started: nothing to run
  // renew_loop() holds a shared_ptr to this state for as long as it runs.
  asio::co_spawn(strand, renew_loop(), asio::bind_cancellation_slot(stop_loop.slot(), asio::detached));
  arm_watchdog();
}

void lease_state::arm_watchdog() {
  // Fires at the local deadline even when a renewal call hangs: the lease is then lost here,
  // while other processes still have to wait out expiry + margin of their own clocks.
  watchdog.expires_at(fsm.deadline());
  watchdog.async_wait([self = shared_from_this()](error_code ec) {
    if (ec || self->phase != lease_phase::held) return;
    if (self->fsm.lost_by(boot_clock::now())) self->lose_at_deadline();
    else self->arm_watchdog();
  });
}

void lease_state::lose_at_deadline() {
  prov->log(log_level::warning, [&] {
    return std::string("lease '" + name + "' lost: no successful renewal before the local deadline");
  });
  if (end(lease_phase::lost, make_error_code(errc::lease_lost)))
    prov->count.losses_at_deadline.fetch_add(1, std::memory_order_relaxed);
  // The document may still name us (e.g. a partition): free it, but only 2 x margin from now.
  // The guarded work was only just told to stop; freeing the lock at once would let a waiter in
  // while it may still be running. Expiry by observation gives the same
  // 2 x margin when nobody frees it.
  prov->release_in_background(name, owner, token, 2 * fsm.margin());
}

// The driver of lease_fsm: performs each action and reports what happened, on the strand. Its own
// loop, not fsm_driver.hpp's: a renewal is not a store call of this lease but a request to the
// provider's batch (renewal_batch.hpp), answered through a callback that wakes this loop's timer,
// and its wait is the batch's due time; the watchdog beside it ends the lease at the deadline.
asio::awaitable<void> lease_state::renew_loop() {
  auto self = shared_from_this();
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  using kind = lease_action::kind;
  auto a = fsm.resume(lease_input::start(boot_clock::now()));
  while (phase == lease_phase::held) {
    switch (a.what) {
      case kind::wait_until:
      case kind::renew: {
        // Handed to the provider's batch, due at `at` (now, for `renew`); it may go up to half a
        // period early to share a command with the provider's other leases. The batch holds only
        // a weak reference: this coroutine waits on its own timer (so an io_context destroyed
        // meanwhile destroys it as before), woken by the batch's answer or the local deadline.
        const auto now = boot_clock::now();
        renewal_batch::request req;
        req.lease = {name, owner, token};
        req.expiry = fsm.expiry();
        req.due = a.what == kind::renew ? now : a.at;
        req.earliest = std::max(now, req.due - fsm.renew_every() / 2);
        req.deadline = fsm.deadline();
        const auto asked = ++renewal_seq;
        answer.reset();
        prov->renewals->submit(req, [weak = weak_from_this(), asked](renewal_outcome r) {
          auto s = weak.lock();
          if (!s) return;
          asio::post(s->strand, [s, asked, r = std::move(r)]() mutable {
            if (asked != s->renewal_seq) return;  // an answer to an earlier request
            s->answer = std::move(r);
            s->renew_timer.cancel();
          });
        });
        renew_timer.expires_at(fsm.deadline());  // useless after it: the watchdog ends the lease then
        auto [woken] = co_await renew_timer.async_wait(asio::as_tuple(asio::use_awaitable));
        (void)woken;  // by the answer (cancelled) or by the deadline: `answer` tells which
        if (phase != lease_phase::held) co_return;
        renewal_outcome r;
        if (answer) {
          r = std::move(*answer);
        } else {
          r.ec = make_error_code(errc::timeout);
          r.message = "no renewal answer before the local deadline";
        }
        if (r.ec == asio::error::operation_aborted) co_return;
        a = fsm.resume(lease_input::renewed(r, r.sent, boot_clock::now()));
        publish_deadline();
        if (a.what == kind::wait_until && !r.ec) prov->count.renewals.fetch_add(1, std::memory_order_relaxed);
        if (a.what == kind::wait_until && r.ec) {
          prov->count.renewal_errors.fetch_add(1, std::memory_order_relaxed);
          prov->log(log_level::warning, [&] {
            return std::string("renewal of '" + name + "' failed (" + r.ec.message() + ": " + r.message + "); retrying");
          });
        }
        break;
      }
      case kind::lost:
        lose_at_deadline();
        co_return;
      case kind::taken:
        prov->log(log_level::warning, [&] {
          return std::string("lease '" + name + "' lost: the lock document names another owner");
        });
        if (end(lease_phase::lost, make_error_code(errc::lease_lost)))
          prov->count.losses_taken_over.fetch_add(1, std::memory_order_relaxed);
        co_return;
    }
  }
}

bool lease_state::end(lease_phase to, error_code why, bool keep_turn) {
  lease_phase expected = lease_phase::held;
  if (!phase.compare_exchange_strong(expected, to)) return false;
  renew_timer.cancel();
  watchdog.cancel();
  prov->renewals->forget(owner);
  stop_loop.emit(asio::cancellation_type::terminal);
  prov->life.remove_live(owner);
  if (to == lease_phase::lost) prov->count.losses.fetch_add(1, std::memory_order_relaxed);
  auto pending = std::move(waiters);
  waiters.clear();
  for (auto& w : pending) complete(std::move(w), why);
  if (!keep_turn) turn.pass();
  return true;
}

void lease_state::release_in_background() {
  if (phase != lease_phase::held) return;
  end(lease_phase::released, make_error_code(errc::released));
  prov->count.releases.fetch_add(1, std::memory_order_relaxed);
  prov->release_in_background(name, owner, token);
}

void lease_state::complete(waiter w, error_code ec) {
  auto ex = w.ex;
  asio::dispatch(ex, [w = std::move(w), ec]() mutable {
    if (w.slot.is_connected()) w.slot.clear();
    std::move(w.handler)(ec);
  });
}

void lease_state::add_waiter(std::uint64_t id, asio::any_completion_handler<void(error_code)> h,
                             asio::cancellation_slot slot, asio::any_completion_executor ex) {
  waiter w{id, std::move(h), slot, std::move(ex)};
  switch (phase.load()) {
    case lease_phase::lost: return complete(std::move(w), make_error_code(errc::lease_lost));
    case lease_phase::released: return complete(std::move(w), make_error_code(errc::released));
    case lease_phase::held: waiters.push_back(std::move(w));
  }
}

void lease_state::cancel_waiter(std::uint64_t id) {
  for (auto it = waiters.begin(); it != waiters.end(); ++it) {
    if (it->id != id) continue;
    waiter w = std::move(*it);
    waiters.erase(it);
    complete(std::move(w), asio::error::operation_aborted);
    return;
  }
}

}  // namespace mongolock::detail
