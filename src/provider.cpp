#include "mongolock/provider.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "detail/lease_state.hpp"
#include "detail/mongo_store.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

provider::provider(client& c, std::string database, std::string collection, lock_options opts) {
  std::string why;
  if (auto ec = validate_namespace(database, collection, &why)) throw boost::system::system_error(ec, why);
  if (auto ec = validate(opts, &why)) throw boost::system::system_error(ec, why);
  detail::store_config cfg{std::move(database), std::move(collection), opts.durability, opts.write_timeout,
                           opts.idle_cleanup};
  auto store = std::make_shared<detail::mongo_store>(c.impl(), std::move(cfg));
  impl_ = std::make_shared<detail::provider_impl>(c.impl()->ex, std::move(store), opts, c.impl()->opts.log);
}

const lock_options& provider::options() const noexcept { return impl_->opts; }

stats provider::snapshot() const noexcept {
  const auto& c = impl_->count;
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return stats{get(c.acquisitions), get(c.failed_attempts), get(c.busy_observations),
               std::chrono::nanoseconds{static_cast<std::int64_t>(get(c.wait_ns))}, get(c.renewals),
               get(c.renewal_errors), get(c.losses), get(c.releases), get(c.server_calls)};
}

namespace detail {

void provider_impl::release_in_background(std::string name, std::string owner, std::int64_t token,
                                          std::chrono::milliseconds after, bool unconfirmed, int attempt) {
  auto self = shared_from_this();
  auto strand = asio::make_strand(ex);
  if (after.count() > 0) {
    auto timer = std::make_shared<asio::steady_timer>(strand, after);
    timer->async_wait([self, timer, name, owner, token, unconfirmed, attempt](error_code) {
      self->release_in_background(name, owner, token, std::chrono::milliseconds{0}, unconfirmed, attempt);
    });
    return;
  }
  store_call<outcome<bool>> start = [self, name, owner, token](auto reply) {
    self->store->release(name, owner, token, std::move(reply));
  };
  call<outcome<bool>>(start, nullptr, std::nullopt,
                      asio::bind_executor(strand, [self, name, owner, token, unconfirmed, attempt](outcome<bool> r) {
                        // Freed, or (for a take we know landed) nothing left to free.
                        if (!r.ec && (r.value || !unconfirmed)) return;
                        if (!r.ec && attempt >= 3) return;  // the unconfirmed take never landed
                        static constexpr std::chrono::milliseconds retry_after[] = {
                            std::chrono::milliseconds(250), std::chrono::milliseconds(1000),
                            std::chrono::milliseconds(4000)};
                        const bool retry = !r.ec || r.ec == errc::server_unavailable || r.ec == errc::ambiguous_result;
                        if (!retry || attempt >= 3 || !self->store->accepting()) {
                          self->log(log_level::warning, "background release of '" + name + "' failed: " + r.message +
                                                            " (the lock expires on its own)");
                          return;
                        }
                        self->release_in_background(name, owner, token, retry_after[attempt], unconfirmed, attempt + 1);
                      }));
}

namespace {

lock_info to_info(std::string name, const lock_doc& d) {
  return lock_info{std::move(name), d.exists && !d.held.owner.empty(), d.held.owner, d.held.token, d.held.beat,
                   d.held.expiry, d.acquired_at_ms};
}

asio::awaitable<std::tuple<error_code, std::size_t>> release_all_body(std::shared_ptr<provider_impl> p) {
  auto leases = p->live_leases();
  std::vector<std::string> owners;
  for (auto& st : leases) {
    // Guarded work stops before the documents are freed. Each end() runs on its lease's strand.
    co_await asio::dispatch(asio::bind_executor(st->strand, asio::use_awaitable));
    if (st->phase != lease_phase::held) continue;
    st->end(lease_phase::released, make_error_code(errc::released));
    owners.push_back(st->owner);
  }
  store_call<outcome<std::int64_t>> call = [p, owners](auto reply) { p->store->release_owners(owners, std::move(reply)); };
  auto r = co_await p->call<outcome<std::int64_t>>(call, nullptr, std::nullopt, asio::use_awaitable);
  if (r.ec) co_return std::tuple{r.ec, std::size_t{0}};
  p->count.releases.fetch_add(static_cast<std::uint64_t>(r.value), std::memory_order_relaxed);
  co_return std::tuple{error_code{}, static_cast<std::size_t>(r.value)};
}

asio::awaitable<std::tuple<error_code, lock_info>> inspect_body(std::shared_ptr<provider_impl> p, std::string name) {
  std::string why;
  if (auto ec = validate_lock_name(name, &why)) co_return std::tuple{ec, lock_info{}};
  store_call<outcome<lock_doc>> call = [p, name](auto reply) { p->store->read(name, read_mode::primary, std::move(reply)); };
  auto r = co_await p->call<outcome<lock_doc>>(call, nullptr, std::nullopt, asio::use_awaitable);
  co_return std::tuple{r.ec, to_info(name, r.value)};
}

asio::awaitable<std::tuple<error_code, std::vector<lock_info>>> list_body(std::shared_ptr<provider_impl> p) {
  store_call<outcome<std::vector<named_doc>>> call = [p](auto reply) { p->store->list(std::move(reply)); };
  auto r = co_await p->call<outcome<std::vector<named_doc>>>(call, nullptr, std::nullopt, asio::use_awaitable);
  std::vector<lock_info> out;
  for (auto& d : r.value) out.push_back(to_info(std::move(d.name), d.doc));
  co_return std::tuple{r.ec, std::move(out)};
}

asio::awaitable<std::tuple<error_code, std::string>> force_body(std::shared_ptr<provider_impl> p, std::string name) {
  std::string why;
  if (auto ec = validate_lock_name(name, &why)) co_return std::tuple{ec, std::string{}};
  store_call<outcome<std::string>> call = [p, name](auto reply) { p->store->force_release(name, std::move(reply)); };
  auto r = co_await p->call<outcome<std::string>>(call, nullptr, std::nullopt, asio::use_awaitable);
  if (!r.ec && !r.value.empty()) p->log(log_level::warning, "lock '" + name + "' force-released from owner " + r.value);
  co_return std::tuple{r.ec, r.value};
}

strand_type new_strand(const provider_impl& p) { return asio::make_strand(p.ex); }

}  // namespace

void start_release_all(std::shared_ptr<provider_impl> p, count_handler h) {
  auto s = new_strand(*p);
  spawn_op<error_code, std::size_t>(s, release_all_body(std::move(p)), std::move(h), false);
}
void start_inspect(std::shared_ptr<provider_impl> p, std::string name, info_handler h) {
  auto s = new_strand(*p);
  spawn_op<error_code, lock_info>(s, inspect_body(std::move(p), std::move(name)), std::move(h));
}
void start_list(std::shared_ptr<provider_impl> p, list_handler h) {
  auto s = new_strand(*p);
  spawn_op<error_code, std::vector<lock_info>>(s, list_body(std::move(p)), std::move(h));
}
void start_force_release(std::shared_ptr<provider_impl> p, std::string name, force_handler h) {
  auto s = new_strand(*p);
  spawn_op<error_code, std::string>(s, force_body(std::move(p), std::move(name)), std::move(h), false);
}

}  // namespace detail
}  // namespace mongolock
