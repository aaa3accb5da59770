#include "mongolock/provider.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "detail/lease_state.hpp"

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
  impl_ = std::make_shared<detail::provider_impl>(c.impl(), std::move(cfg), opts);
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

void provider_impl::release_in_background(std::string name, std::string owner, std::int64_t token, int attempt) {
  auto self = shared_from_this();
  auto cfg_copy = cfg;
  auto strand = asio::make_strand(client->ex);
  offload<outcome<bool>>(
      [cfg_copy, name, owner, token](mongoc_client_t* c) { return release(c, cfg_copy, name, owner, token); },
      nullptr, steady::duration::zero(),
      asio::bind_executor(strand, [self, strand, name, owner, token, attempt](outcome<bool> r) {
        if (!r.ec) return;
        static constexpr std::chrono::milliseconds retry_after[] = {std::chrono::milliseconds(250),
                                                                    std::chrono::milliseconds(1000),
                                                                    std::chrono::milliseconds(4000)};
        const bool retry = r.ec == errc::server_unavailable || r.ec == errc::ambiguous_result;
        if (!retry || attempt >= 3 || self->client->stopped) {
          self->log(log_level::warning, "background release of '" + name + "' failed: " + r.message +
                                            " (the lock expires on its own)");
          return;
        }
        auto timer = std::make_shared<asio::steady_timer>(strand, retry_after[attempt]);
        timer->async_wait([self, timer, name, owner, token, attempt](boost::system::error_code) {
          self->release_in_background(name, owner, token, attempt + 1);
        });
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
  auto cfg = p->cfg;
  std::function<outcome<std::int64_t>(mongoc_client_t*)> call = [cfg, owners](mongoc_client_t* c) {
    return release_owners(c, cfg, owners);
  };
  auto r = co_await p->offload<outcome<std::int64_t>>(std::move(call), nullptr, steady::duration::zero(),
                                                      asio::use_awaitable);
  if (r.ec) co_return std::tuple{r.ec, std::size_t{0}};
  p->count.releases.fetch_add(static_cast<std::uint64_t>(r.value), std::memory_order_relaxed);
  co_return std::tuple{error_code{}, static_cast<std::size_t>(r.value)};
}

asio::awaitable<std::tuple<error_code, lock_info>> inspect_body(std::shared_ptr<provider_impl> p, std::string name) {
  std::string why;
  if (auto ec = validate_lock_name(name, &why)) co_return std::tuple{ec, lock_info{}};
  auto cfg = p->cfg;
  std::function<outcome<lock_doc>(mongoc_client_t*)> call = [cfg, name](mongoc_client_t* c) {
    return read_lock(c, cfg, name);
  };
  auto r = co_await p->offload<outcome<lock_doc>>(std::move(call), nullptr, steady::duration::zero(), asio::use_awaitable);
  co_return std::tuple{r.ec, to_info(name, r.value)};
}

asio::awaitable<std::tuple<error_code, std::vector<lock_info>>> list_body(std::shared_ptr<provider_impl> p) {
  auto cfg = p->cfg;
  struct listing {
    outcome<std::vector<lock_doc>> docs;
    std::vector<std::string> names;
    error_code ec;  // offload needs these two members on the result type
    std::string message;
  };
  std::function<listing(mongoc_client_t*)> call = [cfg](mongoc_client_t* c) {
    listing l;
    l.docs = read_all(c, cfg, &l.names);
    l.ec = l.docs.ec;
    l.message = l.docs.message;
    return l;
  };
  auto r = co_await p->offload<listing>(std::move(call), nullptr, steady::duration::zero(), asio::use_awaitable);
  std::vector<lock_info> out;
  for (std::size_t i = 0; !r.ec && i < r.names.size(); ++i) out.push_back(to_info(r.names[i], r.docs.value[i]));
  co_return std::tuple{r.ec, std::move(out)};
}

asio::awaitable<std::tuple<error_code, std::string>> force_body(std::shared_ptr<provider_impl> p, std::string name) {
  std::string why;
  if (auto ec = validate_lock_name(name, &why)) co_return std::tuple{ec, std::string{}};
  auto cfg = p->cfg;
  std::function<outcome<std::string>(mongoc_client_t*)> call = [cfg, name](mongoc_client_t* c) {
    return force_release(c, cfg, name);
  };
  auto r = co_await p->offload<outcome<std::string>>(std::move(call), nullptr, steady::duration::zero(),
                                                     asio::use_awaitable);
  if (!r.ec && !r.value.empty()) p->log(log_level::warning, "lock '" + name + "' force-released from owner " + r.value);
  co_return std::tuple{r.ec, r.value};
}

strand_type new_strand(const provider_impl& p) { return asio::make_strand(p.client->ex); }

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
