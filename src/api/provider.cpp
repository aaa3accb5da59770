#include "mongolock/provider.hpp"
#include "model/clocks.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "model/document_name.hpp"
#include "engine/lease_state.hpp"
#include "engine/lock_info.hpp"
#include "store/mongo_store.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = detail::steady_clock;

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
  impl_->client = c.impl_;
}

const lock_options& provider::options() const noexcept { return impl_->opts; }

namespace {
// The fields of lock_options that belong to the collection (the store writes every lock of the
// provider with them): a lock may not have its own. The first that differs, by name; else null.
const char* storage_field_differing(const lock_options& own, const lock_options& provider) {
  if (own.durability != provider.durability) return "durability";
  if (own.write_timeout != provider.write_timeout) return "write_timeout";
  if (own.idle_cleanup != provider.idle_cleanup) return "idle_cleanup";
  return nullptr;
}
}  // namespace

lock provider::create_lock(std::string name, const lock_options& options) const {
  std::string why;
  auto ec = validate(options, &why);
  if (const char* field = ec ? nullptr : storage_field_differing(options, impl_->opts)) {
    ec = make_error_code(errc::invalid_options);
    why = std::string(field) + " must be the provider's: it belongs to the lock collection, not to one lock";
  }
  if (ec) throw boost::system::system_error(ec, "lock '" + name + "': " + why);
  return lock(impl_, std::move(name), std::make_shared<const lock_options>(options), true);
}

stats provider::snapshot() const noexcept { return impl_->snapshot(); }

namespace detail {
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
  auto leases = p->life.live_leases();
  std::vector<std::string> names, owners;
  for (auto& st : leases) {
    // Guarded work stops before the documents are freed. Each end() runs on its lease's strand.
    co_await asio::dispatch(asio::bind_executor(st->strand, asio::use_awaitable));
    if (st->phase != lease_phase::held) continue;
    st->end(lease_phase::released, make_error_code(errc::released));
    names.push_back(st->name);
    owners.push_back(st->owner);
  }
  // One command per part of the server's size limit (engine/splitting_store.hpp); a part that
  // failed leaves its documents to expire, the others' count.
  auto r = co_await p->ops.release_owners(names, owners);
  p->count.releases.fetch_add(static_cast<std::uint64_t>(r.value), std::memory_order_relaxed);
  co_return std::tuple{settle(*p, d, "release all", r.ec, r.message), static_cast<std::size_t>(r.value)};
}

// Ends and releases every live lease, then waits until no background work is left, or until
// lock_options::expiry has passed and no give-back ladder on a healthy server is still at work
// (docs/design.md section 4, "Shutdown": a take of unknown outcome may still land before the
// ladder's last attempt, which frees it).
asio::awaitable<std::tuple<error_code>> shutdown_body(std::shared_ptr<provider_impl> p, diagnostics* d) {
  const auto started = steady::now();
  const auto live = p->close();
  std::vector<std::string> names;
  for (const auto& st : live) names.push_back(st->name);
  // Their releases as one command (docs/design.md section 14), once each has reached the store.
  const auto gathered = p->grouped->gather(p->ex, names);
  for (auto& st : live) {
    // On the lease's strand, and awaited: the release's ticket exists before shutdown waits.
    co_await asio::dispatch(asio::bind_executor(st->strand, asio::use_awaitable));
    st->release_in_background();
  }
  // Back on this operation's strand: the loop above resumed on the last lease's strand, and the
  // timer below must only be touched from one strand.
  auto ex = co_await asio::this_coro::executor;
  co_await asio::post(ex, asio::use_awaitable);
  const auto until = [&] { return std::max(started + p->opts.expiry, p->life.ladder_until()); };
  auto bound = std::make_shared<detail::steady_timer>(ex, until());
  auto idle = std::make_shared<std::atomic<bool>>(false);
  // Posted to this strand, so it runs after the wait below has started, even when already idle.
  // A weak reference: after a timeout the waiter stays registered and must not keep the timer.
  p->life.when_idle([ex, weak = std::weak_ptr(bound), idle] {
    asio::post(ex, [weak, idle] {
      *idle = true;
      if (auto t = weak.lock()) t->cancel();
    });
  });
  // At least one wait (the idle notice may be queued behind this coroutine); a ladder that began
  // or stepped on while waiting moves the bound on.
  do {
    bound->expires_at(until());
    co_await bound->async_wait(asio::as_tuple(asio::use_awaitable));
  } while (!*idle && until() > steady::now());
  if (!*idle) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - started);
    const auto why = "background releases still under way after " + std::to_string(waited.count()) +
                     " ms (the lease expiry, and every give-back ladder on a healthy server)";
    p->log(log_level::warning, [&] { return "shutdown: " + why; });
    co_return std::tuple{settle(*p, d, "shutdown", make_error_code(errc::timeout), why)};
  }
  auto failed = p->life.failure();
  co_return std::tuple{settle(*p, d, "shutdown", failed.ec, std::move(failed.why))};
}

asio::awaitable<std::tuple<error_code, lock_info>> inspect_body(std::shared_ptr<provider_impl> p, std::string name,
                                                                bool committed, diagnostics* d) {
  std::string why;
  if (auto ec = validate_document_name(name, &why)) co_return std::tuple{settle(*p, d, "inspect", ec, why), lock_info{}};
  auto r = co_await p->ops.read(name, committed ? read_mode::majority : read_mode::primary);
  co_return std::tuple{settle(*p, d, "inspect", r.ec, r.message), to_info(name, r.value)};
}

asio::awaitable<std::tuple<error_code, std::vector<lock_info>>> list_body(std::shared_ptr<provider_impl> p,
                                                                          diagnostics* d) {
  auto r = co_await p->ops.list();
  std::vector<lock_info> out;
  for (auto& doc : r.value) out.push_back(to_info(std::move(doc.name), doc.doc));
  co_return std::tuple{settle(*p, d, "list", r.ec, r.message), std::move(out)};
}

asio::awaitable<std::tuple<error_code, std::string>> force_body(std::shared_ptr<provider_impl> p, std::string name,
                                                                force_mode mode, diagnostics* d) {
  std::string why;
  if (auto ec = validate_document_name(name, &why))
    co_return std::tuple{settle(*p, d, "force release", ec, why), std::string{}};
  const bool immediate = mode == force_mode::immediate;
  auto r = co_await p->ops.force_release(name, immediate);
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
void provider::start_inspect(impl_ptr p, std::string name, bool committed, diagnostics* d, handler<lock_info> h) {
  auto s = detail::new_strand(*p);
  spawn_op<error_code, lock_info>(s, detail::inspect_body(std::move(p), std::move(name), committed, d), std::move(h));
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
