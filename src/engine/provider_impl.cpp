// A provider's shared state: background releases, the shutdown ticket, stats.
#include "engine/provider_impl.hpp"
#include "model/clocks.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include "engine/lease_state.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

void provider_impl::release_in_background(std::string name, std::string owner, std::int64_t token,
                                          std::chrono::milliseconds after, bool unconfirmed, int attempt) {
  auto self = shared_from_this();
  auto strand = asio::make_strand(ex);
  auto working = begin_work();  // held until this attempt ends (the next one takes its own)
  if (unconfirmed && attempt == 0)
    life.note_ladder_until(steady_clock::now() + after + give_back_left(0));
  if (after.count() > 0) {
    auto timer = std::make_shared<detail::steady_timer>(strand, after);
    timer->async_wait([self, timer, name, owner, token, unconfirmed, attempt, working](error_code) {
      self->release_in_background(name, owner, token, std::chrono::milliseconds{0}, unconfirmed, attempt);
    });
    return;
  }
  auto answered = [self, name, owner, token, unconfirmed, attempt, working](outcome<bool> r) {
    // Freed, or (for a take we know landed) nothing left to free.
    if (!r.ec && (r.value || !unconfirmed)) return;
    if (!r.ec && attempt >= 3) return;  // the unconfirmed take never landed
    const bool retry = !r.ec || r.ec == errc::server_unavailable || r.ec == errc::ambiguous_result;
    if (!retry || attempt >= 3 || !self->store->accepting()) {
      const auto why = "background release of '" + name + "' failed: " + r.message + " (the lock expires on its own)";
      self->log(log_level::warning, [&] { return why; });
      self->life.note_failure(r.ec ? r.ec : make_error_code(errc::server_unavailable), why);
      return;
    }
    const auto step = static_cast<std::size_t>(attempt);
    // A ladder on a healthy server: shutdown waits for its remaining steps.
    if (!r.ec) self->life.note_ladder_until(steady_clock::now() + give_back_left(step));
    self->release_in_background(name, owner, token, give_back_retries[step], unconfirmed, attempt + 1);
  };
  ops.release(name, owner, token, std::nullopt, asio::bind_executor(strand, std::move(answered)));
}

void provider_impl::count_wait(std::chrono::nanoseconds waited) {
  count.wait_ns.fetch_add(static_cast<std::uint64_t>(waited.count()), std::memory_order_relaxed);
  std::size_t bucket = 0;
  while (bucket < stats::wait_bucket_bounds.size() && waited > stats::wait_bucket_bounds[bucket]) ++bucket;
  count.wait_buckets[bucket].fetch_add(1, std::memory_order_relaxed);
}

stats provider_impl::snapshot() const {
  const auto& c = count;
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  stats s;
  s.acquisitions = get(c.acquisitions);
  s.failed_attempts = get(c.failed_attempts);
  s.busy_observations = get(c.busy_observations);
  s.wait_time = std::chrono::nanoseconds{static_cast<std::int64_t>(get(c.wait_ns))};
  s.renewals = get(c.renewals);
  s.renewal_errors = get(c.renewal_errors);
  s.losses = get(c.losses);
  s.losses_at_deadline = get(c.losses_at_deadline);
  s.losses_taken_over = get(c.losses_taken_over);
  s.releases = get(c.releases);
  // A renewal batch is one call; an operation that rode in another's command is none; a call
  // split in parts is one each.
  s.server_calls = get(c.server_calls) + renewals->commands() - grouped->saved() + splitter->extra_commands();
  s.acquires_in_progress = get(c.acquiring);
  for (std::size_t i = 0; i < s.wait_histogram.size(); ++i) s.wait_histogram[i] = get(c.wait_buckets[i]);
  s.leases_held = life.live_count();
  renewals->round_trips(s);
  return s;
}

provider_impl::ticket provider_impl::begin_work() {
  life.start_work();
  // The deleter runs when the last copy goes, even though the pointer is null.
  return ticket(static_cast<void*>(nullptr), [self = shared_from_this()](void*) { self->life.end_work(); });
}

std::vector<std::shared_ptr<lease_state>> provider_impl::close() {
  life.close();
  for (auto& w : turns.drain()) {  // parked acquires never started: they end here
    count.acquiring.fetch_sub(1, std::memory_order_relaxed);
    finish_parked(w, boost::asio::error::operation_aborted, "the provider is shutting down", ex);
  }
  return life.live_leases();  // add_live refuses from here on, so this is every lease there will be
}

}  // namespace mongolock::detail
