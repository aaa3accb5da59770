#include "mongolock/provider.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "detail/document_name.hpp"
#include "detail/lease_state.hpp"
#include "detail/lock_info.hpp"
#include "detail/mongo_store.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

provider::provider(client& c, std::string database, std::string collection, lock_options opts) {
  std::string why;
  if (auto ec = validate_namespace(database, collection, &why)) throw boost::system::system_error(ec, why);
  if (auto ec = validate(opts, &why)) throw boost::system::system_error(ec, why);
  auto meta = detail::this_process(c.impl_->opts.label);
  detail::store_config cfg{std::move(database), std::move(collection), opts.durability, opts.write_timeout,
                           opts.idle_cleanup, meta};
  auto store = std::make_shared<detail::mongo_store>(c.impl_, std::move(cfg));
  impl_ = std::make_shared<detail::provider_impl>(c.impl_->ex, std::move(store), opts, c.impl_->opts.log,
                                                  c.impl_->opts.log_threshold);
  impl_->meta = std::move(meta);
}

const lock_options& provider::options() const noexcept { return impl_->opts; }

lock provider::create_lock(std::string name, const lock_timing& timing) const {
  auto merged = with_timing(impl_->opts, timing);
  std::string why;
  if (auto ec = validate(merged, &why)) throw boost::system::system_error(ec, "lock '" + name + "': " + why);
  return lock(impl_, std::move(name), std::make_shared<const lock_options>(std::move(merged)), true);
}

stats provider::snapshot() const noexcept { return impl_->snapshot(); }

namespace detail {

void provider_impl::release_in_background(std::string name, std::string owner, std::int64_t token,
                                          std::chrono::milliseconds after, bool unconfirmed, int attempt) {
  auto self = shared_from_this();
  auto strand = asio::make_strand(ex);
  auto working = begin_work();  // held until this attempt ends (the next one takes its own)
  if (after.count() > 0) {
    auto timer = std::make_shared<asio::steady_timer>(strand, after);
    timer->async_wait([self, timer, name, owner, token, unconfirmed, attempt, working](error_code) {
      self->release_in_background(name, owner, token, std::chrono::milliseconds{0}, unconfirmed, attempt);
    });
    return;
  }
  store_call<outcome<bool>> start = [self, name, owner, token](auto reply) {
    self->store->release(name, owner, token, std::move(reply));
  };
  call<outcome<bool>>(start, nullptr, std::nullopt,
                      asio::bind_executor(strand, [self, name, owner, token, unconfirmed, attempt, working](outcome<bool> r) {
                        // Freed, or (for a take we know landed) nothing left to free.
                        if (!r.ec && (r.value || !unconfirmed)) return;
                        if (!r.ec && attempt >= 3) return;  // the unconfirmed take never landed
                        static constexpr std::chrono::milliseconds retry_after[] = {
                            std::chrono::milliseconds(250), std::chrono::milliseconds(1000),
                            std::chrono::milliseconds(4000)};
                        const bool retry = !r.ec || r.ec == errc::server_unavailable || r.ec == errc::ambiguous_result;
                        if (!retry || attempt >= 3 || !self->store->accepting()) {
                          const auto why = "background release of '" + name + "' failed: " + r.message +
                                           " (the lock expires on its own)";
                          self->log(log_level::warning, [&] { return why; });
                          self->note_failure(r.ec ? r.ec : make_error_code(errc::server_unavailable), why);
                          return;
                        }
                        self->release_in_background(name, owner, token, retry_after[attempt], unconfirmed, attempt + 1);
                      }));
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
  s.releases = get(c.releases);
  s.server_calls = get(c.server_calls) + renewals->commands();  // a renewal batch is one call
  s.acquires_in_progress = get(c.acquiring);
  for (std::size_t i = 0; i < s.wait_histogram.size(); ++i) s.wait_histogram[i] = get(c.wait_buckets[i]);
  std::lock_guard g(mu);
  s.leases_held = live.size();
  return s;
}

provider_impl::ticket provider_impl::begin_work() {
  {
    std::lock_guard g(mu);
    ++working_;
  }
  // The deleter runs when the last copy goes, even though the pointer is null.
  return ticket(static_cast<void*>(nullptr), [self = shared_from_this()](void*) { self->end_work(); });
}

void provider_impl::end_work() {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard g(mu);
    if (--working_ == 0) ready.swap(idle_waiters_);
  }
  for (auto& f : ready) f();
}

void provider_impl::when_idle(std::function<void()> f) {
  {
    std::lock_guard g(mu);
    if (working_ > 0) {
      idle_waiters_.push_back(std::move(f));
      return;
    }
  }
  f();
}

std::vector<std::shared_ptr<lease_state>> provider_impl::close() {
  std::vector<std::function<void()>> cancel;
  {
    std::lock_guard g(mu);
    if (!closing_) failure_ = {};  // the first shutdown reports what fails from here on
    closing_ = true;  // under mu, so add_live (also under mu) cannot miss it
    for (auto& [_, c] : cancellers_) cancel.push_back(c);
  }
  for (auto& c : cancel) c();
  for (auto& w : turns.drain()) {  // parked acquires never started: they end here
    count.acquiring.fetch_sub(1, std::memory_order_relaxed);
    finish_parked(w, boost::asio::error::operation_aborted, "the provider is shutting down", ex);
  }
  return live_leases();  // add_live refuses from here on, so this is every lease there will be
}

std::uint64_t provider_impl::on_close(std::function<void()> cancel) {
  std::lock_guard g(mu);
  cancellers_.emplace(++next_canceller_, std::move(cancel));
  return next_canceller_;
}

void provider_impl::forget_on_close(std::uint64_t id) {
  std::lock_guard g(mu);
  cancellers_.erase(id);
}

void provider_impl::note_failure(error_code ec, std::string why) {
  std::lock_guard g(mu);
  failure_ = {ec, std::move(why)};
}

namespace {

// The reason of an operation's outcome, for the caller who asked for it (error.hpp): empty on
// success. Failures a caller receives go to the log at debug level only.
error_code settle(const provider_impl& p, diagnostics* d, const char* what, error_code ec, std::string why) {
  if (ec) p.log(log_level::debug, [&] { return std::string(what) + ": " + ec.message() + ": " + why; });
  if (d) d->reason = ec ? std::move(why) : std::string();
  return ec;
}

asio::awaitable<std::tuple<error_code, std::size_t>> release_all_body(std::shared_ptr<provider_impl> p,
                                                                      diagnostics* d) {
  const auto working = p->begin_work();  // a shutdown meanwhile waits for this release
  auto leases = p->live_leases();
  std::vector<std::string> names, owners;
  for (auto& st : leases) {
    // Guarded work stops before the documents are freed. Each end() runs on its lease's strand.
    co_await asio::dispatch(asio::bind_executor(st->strand, asio::use_awaitable));
    if (st->phase != lease_phase::held) continue;
    st->end(lease_phase::released, make_error_code(errc::released));
    names.push_back(st->name);
    owners.push_back(st->owner);
  }
  store_call<outcome<std::int64_t>> call = [p, names, owners](auto reply) {
    p->store->release_owners(names, owners, std::move(reply));
  };
  auto r = co_await p->call<outcome<std::int64_t>>(std::move(call), nullptr, std::nullopt, asio::use_awaitable);
  if (r.ec) co_return std::tuple{settle(*p, d, "release all", r.ec, r.message), std::size_t{0}};
  p->count.releases.fetch_add(static_cast<std::uint64_t>(r.value), std::memory_order_relaxed);
  co_return std::tuple{settle(*p, d, "release all", {}, ""), static_cast<std::size_t>(r.value)};
}

// Ends and releases every live lease, then waits until no background work is left or
// lock_options::expiry has passed (by then what it would free has expired on its own).
asio::awaitable<std::tuple<error_code>> shutdown_body(std::shared_ptr<provider_impl> p, diagnostics* d) {
  const auto started = steady::now();
  for (auto& st : p->close()) {
    // On the lease's strand, and awaited: the release's ticket exists before shutdown waits.
    co_await asio::dispatch(asio::bind_executor(st->strand, asio::use_awaitable));
    st->release_in_background();
  }
  // Back on this operation's strand: the loop above resumed on the last lease's strand, and the
  // timer below must only be touched from one strand.
  auto ex = co_await asio::this_coro::executor;
  co_await asio::post(ex, asio::use_awaitable);
  auto bound = std::make_shared<asio::steady_timer>(ex, started + p->opts.expiry);
  auto idle = std::make_shared<std::atomic<bool>>(false);
  // Posted to this strand, so it runs after the wait below has started, even when already idle.
  // A weak reference: after a timeout the waiter stays registered and must not keep the timer.
  p->when_idle([ex, weak = std::weak_ptr(bound), idle] {
    asio::post(ex, [weak, idle] {
      *idle = true;
      if (auto t = weak.lock()) t->cancel();
    });
  });
  co_await bound->async_wait(asio::as_tuple(asio::use_awaitable));
  if (!*idle) {
    const auto why = "background releases still under way after the lease expiry (" +
                     std::to_string(p->opts.expiry.count()) + " ms)";
    p->log(log_level::warning, [&] { return "shutdown: " + why; });
    co_return std::tuple{settle(*p, d, "shutdown", make_error_code(errc::timeout), why)};
  }
  auto failed = p->failure();
  co_return std::tuple{settle(*p, d, "shutdown", failed.ec, std::move(failed.why))};
}

asio::awaitable<std::tuple<error_code, lock_info>> inspect_body(std::shared_ptr<provider_impl> p, std::string name,
                                                                diagnostics* d) {
  std::string why;
  if (auto ec = validate_document_name(name, &why)) co_return std::tuple{settle(*p, d, "inspect", ec, why), lock_info{}};
  store_call<outcome<lock_doc>> call = [p, name](auto reply) { p->store->read(name, read_mode::primary, std::move(reply)); };
  auto r = co_await p->call<outcome<lock_doc>>(std::move(call), nullptr, std::nullopt, asio::use_awaitable);
  co_return std::tuple{settle(*p, d, "inspect", r.ec, r.message), to_info(name, r.value)};
}

asio::awaitable<std::tuple<error_code, std::vector<lock_info>>> list_body(std::shared_ptr<provider_impl> p,
                                                                          diagnostics* d) {
  store_call<outcome<std::vector<named_doc>>> call = [p](auto reply) { p->store->list(std::move(reply)); };
  auto r = co_await p->call<outcome<std::vector<named_doc>>>(std::move(call), nullptr, std::nullopt, asio::use_awaitable);
  std::vector<lock_info> out;
  for (auto& doc : r.value) out.push_back(to_info(std::move(doc.name), doc.doc));
  co_return std::tuple{settle(*p, d, "list", r.ec, r.message), std::move(out)};
}

asio::awaitable<std::tuple<error_code, std::string>> force_body(std::shared_ptr<provider_impl> p, std::string name,
                                                                force_mode mode, diagnostics* d) {
  std::string why;
  if (auto ec = validate_document_name(name, &why))
    co_return std::tuple{settle(*p, d, "force release", ec, why), std::string{}};
  store_call<outcome<std::string>> call = [p, name, immediate = mode == force_mode::immediate](auto reply) {
    p->store->force_release(name, immediate, std::move(reply));
  };
  auto r = co_await p->call<outcome<std::string>>(std::move(call), nullptr, std::nullopt, asio::use_awaitable);
  if (!r.ec && !r.value.empty()) p->log(log_level::warning, [&] {
    return std::string("lock '" + name + "' force-released from owner " + r.value);
  });
  co_return std::tuple{settle(*p, d, "force release", r.ec, r.message), r.value};
}

strand_type new_strand(const provider_impl& p) { return asio::make_strand(p.ex); }

}  // namespace
}  // namespace detail

using detail::spawn_op;

void provider::start_release_all(impl_ptr p, diagnostics* d, handler<std::size_t> h) {
  auto s = detail::new_strand(*p);
  spawn_op<error_code, std::size_t>(s, detail::release_all_body(std::move(p), d), std::move(h), false);
}
void provider::start_shutdown(impl_ptr p, diagnostics* d, handler<> h) {
  auto s = detail::new_strand(*p);
  spawn_op<error_code>(s, detail::shutdown_body(std::move(p), d), std::move(h), false);
}
void provider::start_inspect(impl_ptr p, std::string name, diagnostics* d, handler<lock_info> h) {
  auto s = detail::new_strand(*p);
  spawn_op<error_code, lock_info>(s, detail::inspect_body(std::move(p), std::move(name), d), std::move(h));
}
void provider::start_list(impl_ptr p, diagnostics* d, handler<std::vector<lock_info>> h) {
  auto s = detail::new_strand(*p);
  spawn_op<error_code, std::vector<lock_info>>(s, detail::list_body(std::move(p), d), std::move(h));
}
void provider::start_force_release(impl_ptr p, std::string name, force_mode mode, diagnostics* d,
                                   handler<std::string> h) {
  auto s = detail::new_strand(*p);
  spawn_op<error_code, std::string>(s, detail::force_body(std::move(p), std::move(name), mode, d), std::move(h),
                                    false);
}

}  // namespace mongolock
