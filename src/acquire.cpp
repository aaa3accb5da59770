// The acquire operation: read, decide (free / held / expired by observation), compare-and-swap,
// back off. Waiting costs one read per attempt on the server, never a write.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>
#include <random>

#include "detail/backoff.hpp"
#include "detail/expiry_observer.hpp"
#include "detail/jitter_rng.hpp"
#include "detail/lease_state.hpp"
#include "mongolock/lock.hpp"

namespace mongolock::detail {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;
using result = std::tuple<error_code, lease>;

result fail(provider_impl& p, error_code ec, const std::string& name, const std::string& why) {
  if (ec != asio::error::operation_aborted && ec != errc::busy && ec != errc::timeout)
    p.log(log_level::error, "acquire '" + name + "': " + ec.message() + (why.empty() ? "" : ": " + why));
  return {ec, lease{}};
}

bool cancelled(const asio::cancellation_state& s) { return s.cancelled() != asio::cancellation_type::none; }

asio::awaitable<result> acquire_body(std::shared_ptr<provider_impl> p, strand_type strand, std::string name,
                                     acquire_mode mode, std::chrono::milliseconds timeout) {
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto started = steady::now();
  std::string why;
  if (auto ec = validate_lock_name(name, &why)) co_return fail(*p, ec, "(invalid)", why);

  if (timeout.count() < 0) timeout = p->opts.acquire_timeout;
  const std::optional<steady::time_point> deadline =
      timeout.count() > 0 ? std::optional{started + timeout} : std::nullopt;
  auto time_left = [&]() -> steady::duration {
    return deadline ? std::max(*deadline - steady::now(), steady::duration{1}) : steady::duration::zero();
  };
  const auto cfg = p->cfg;

  if (!p->prepared) {  // once per provider: version check + TTL index, off the hot path after
    // Named, not a temporary inside co_await: GCC 12 destroys such temporaries twice.
    std::function<outcome<server_info>(mongoc_client_t*)> call = [cfg](mongoc_client_t* c) { return prepare(c, cfg); };
    auto r = co_await p->offload<outcome<server_info>>(std::move(call), nullptr, time_left(), asio::use_awaitable);
    if (r.ec) co_return fail(*p, r.ec, name, r.message);
    if (!r.message.empty()) p->log(log_level::warning, r.message);
    p->prepared = true;
  }

  const auto expiry = p->opts.expiry;
  const auto margin = p->opts.effective_margin();
  const std::string owner = new_owner_id();
  backoff wait(p->opts.backoff_min, p->opts.backoff_max);
  expiry_observer observer;
  jitter_rng rng(p->next_seed());
  asio::steady_timer timer(strand);
  bool verifying = false;  // try_once: confirming that a silent holder is gone

  // First attempt: if this provider freed the lock last, swap against that state without a read.
  std::optional<lock_doc> remembered = p->recall_free(name);
  for (;;) {
    if (cancelled(co_await asio::this_coro::cancellation_state))
      co_return fail(*p, asio::error::operation_aborted, name, "");
    outcome<lock_doc> seen;
    if (remembered) {
      seen.value = *std::exchange(remembered, std::nullopt);
    } else {
      std::function<outcome<lock_doc>(mongoc_client_t*)> read = [cfg, name](mongoc_client_t* c) {
        return read_lock(c, cfg, name);
      };
      seen = co_await p->offload<outcome<lock_doc>>(std::move(read), nullptr, time_left(), asio::use_awaitable);
    }
    const auto received = steady::now();
    if (seen.ec) co_return fail(*p, seen.ec, name, seen.message);

    const bool free = !seen.value.exists || seen.value.held.owner.empty();
    bool changed = false;  // a held lock's (owner, token, beat) differs from the last look
    if (free) {
      wait.reset();
      observer.forget();
    } else {
      changed = observer.observe(seen.value.held, received, margin);
    }
    if (free || observer.expired(steady::now())) {
      const auto sent = steady::now();
      auto observed = seen.value;
      // If this call is abandoned (cancelled, timed out) and the server granted the lock anyway,
      // give it back at once instead of leaving it to expire.
      std::function<void(outcome<taken>)> give_back = [p, name, owner](outcome<taken> late) {
        if (late.value.won || late.ambiguous) p->release_in_background(name, owner, late.value.token);
      };
      std::function<outcome<taken>(mongoc_client_t*)> take = [cfg, name, observed, owner, expiry](mongoc_client_t* c) {
        return try_take(c, cfg, name, observed, owner, expiry);
      };
      auto took = co_await p->offload<outcome<taken>>(std::move(take), std::move(give_back), time_left(),
                                                      asio::use_awaitable);
      if (took.ec) {
        if (took.ambiguous) p->release_in_background(name, owner, took.value.token);
        co_return fail(*p, took.ec, name, took.message);
      }
      if (took.value.won) {
        auto st = std::make_shared<lease_state>(p, strand, name, owner, took.value.token,
                                                lease_clock(sent, expiry, margin));
        p->add_live(owner, st);
        st->start();
        p->count.acquisitions.fetch_add(1, std::memory_order_relaxed);
        p->count.wait_ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now() - started).count(),
                                   std::memory_order_relaxed);
        co_return result{error_code{}, lease(std::move(st))};
      }
      // Lost the race (E11000 or a CAS that matched nothing): an outcome, not an error. Read
      // again at once: the lock has a new holder (or our remembered state was stale).
      p->count.failed_attempts.fetch_add(1, std::memory_order_relaxed);
      continue;
    } else {
      p->count.busy_observations.fetch_add(1, std::memory_order_relaxed);
    }

    if (mode == acquire_mode::try_once && !verifying) {
      // One look, so a live holder means busy. But a holder whose own clock says it last renewed
      // long ago has probably died, and nobody may ever wait long enough to observe that: spend
      // one observation window (expiry + margin) confirming it. Only the unchanged heartbeat
      // decides; a wrong clock can cost this one bounded wait, never safety.
      const auto silent_ms = wall_ms() - seen.value.renewed_at_ms;
      if (seen.value.renewed_at_ms == 0 || silent_ms < 3 * seen.value.held.expiry.count())
        co_return fail(*p, make_error_code(errc::busy), name, "");
      verifying = true;
    } else if (verifying && changed) {
      co_return fail(*p, make_error_code(errc::busy), name, "");  // it renewed: alive after all
    }
    auto delay = steady::duration(wait.next(rng));
    if (auto at = observer.expires_at()) delay = std::min(delay, std::max(*at - steady::now(), steady::duration{0}));
    if (deadline) {
      if (steady::now() >= *deadline) co_return fail(*p, make_error_code(errc::timeout), name, "");
      delay = std::min(delay, *deadline - steady::now());
    }
    timer.expires_after(delay);
    auto [waited] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (waited) co_return fail(*p, asio::error::operation_aborted, name, "");
  }
}

}  // namespace

void start_acquire(std::shared_ptr<provider_impl> p, std::string name, acquire_mode mode,
                   std::chrono::milliseconds timeout, acquire_handler h) {
  auto strand = asio::make_strand(p->client->ex);
  spawn_op<error_code, lease>(strand, acquire_body(std::move(p), strand, std::move(name), mode, timeout), std::move(h));
}

}  // namespace mongolock::detail
