// The fenced write's asynchronous side (include/mongolock/fence.hpp): the blocking commands are
// store/fence_commands.cpp's, run on a worker of the client; this turns their report into the
// public result and the reason into diagnostics.
#include "mongolock/fence.hpp"
#include "mongolock/multi_lock.hpp"

#include <boost/asio/strand.hpp>
#include <atomic>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/access.hpp"
#include "engine/lease_state.hpp"
#include "engine/spawn.hpp"
#include "store/async_call.hpp"
#include "store/client_impl.hpp"
#include "store/fence_commands.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

std::shared_ptr<client_impl> client_of(const client& c) noexcept {
  return access::impl(c);
}

namespace {

fence_request to_request(fence_call call) {
  fence_request r;
  r.database = std::move(call.where.database);
  r.collection = std::move(call.where.collection);
  r.field = std::move(call.where.fence_field);
  r.durability = call.where.durability;
  r.write_timeout = call.where.write_timeout;
  r.token = call.token;
  r.items.reserve(call.ops.size());
  for (auto& op : call.ops) {
    const auto kind = op.kind == fenced_kind::update    ? fence_kind::update
                      : op.kind == fenced_kind::replace ? fence_kind::replace
                                                        : fence_kind::remove;
    r.items.push_back({kind, {op.filter.data(), op.filter.is_bson()}, {op.change.data(), op.change.is_bson()},
                       op.upsert});
  }
  return r;
}

asio::awaitable<std::tuple<error_code, fenced_result>> fenced_body(std::shared_ptr<client_impl> impl,
                                                                  fence_request req, diagnostics* d) {
  using report = outcome<fence_report>;
  auto shared = std::make_shared<const fence_request>(std::move(req));
  // Set once the caller has abandoned the write (cancelled, or timed out by a cancel_after): the
  // worker sends no further op, so ops left over cannot overwrite a write the caller sends again
  // with the same token (docs/design.md section 15, "Cancellation").
  auto stop = std::make_shared<std::atomic<bool>>(false);
  store_call<report> call = [impl, shared, stop](std::function<void(report)> reply) {
    impl->run<report>(lane::acquisition, std::move(reply),
                      [shared, stop](mongoc_client_t* c) { return fenced_write(c, *shared, stop.get()); });
  };
  auto r = co_await async_call<report>(impl->ex, call, nullptr, std::nullopt, asio::use_awaitable);
  if (r.ec == asio::error::operation_aborted) stop->store(true);
  if (d) d->reason = r.ec ? r.message : std::string();
  if (r.ec && r.ec != errc::fenced_out)
    impl->log(log_level::debug, [&] { return "fenced write failed: " + r.message; });
  co_return std::tuple{r.ec, fenced_result{r.value.matched, r.value.upserted, std::move(r.value.refused)}};
}

}  // namespace

void start_fenced_write(std::shared_ptr<client_impl> c, fence_call call, diagnostics* d, fence_handler h) {
  auto strand = asio::make_strand(c->ex);
  auto body = fenced_body(c, to_request(std::move(call)), d);
  spawn_op<error_code, fenced_result>(strand, std::move(body), std::move(h));
}

}  // namespace mongolock::detail

namespace mongolock {

// ---- The leases' fenced-write hooks (detail/fenced_surface.hpp) ----
// A lease known to have ended sends nothing (detail/fenced_surface.hpp): the fence would refuse a
// stale write anyway once a newer holder wrote, but a write after a release or a known loss is a
// bug in the caller, better told at once.
detail::fence_context lease::fence_context() const {
  if (!state_) return {boost::asio::system_executor(), nullptr, 0, {make_error_code(errc::not_held), nothing_held}};
  if (auto ec = status_of(*state_))
    return {strand_of(*state_), nullptr, 0,
            {ec, ec == errc::lease_lost ? "this lease was lost: a fenced write needs a held lease"
                                        : "this lease was released: a fenced write needs a held lease"}};
  return {strand_of(*state_), state_->prov->client, state_->token, {}};
}

// The highest token of the set: above every token of an earlier holder of the same set, since
// each name's token grew (docs/design.md section 15).
detail::fence_context multi_lease::fence_context() const {
  if (!*this) return {boost::asio::system_executor(), nullptr, 0, {make_error_code(errc::not_held), nothing_held}};
  detail::fence_context ctx;
  for (const auto& l : *leases_) {  // the first lease that ended refuses for the set
    ctx = l.fence_context();
    if (ctx.refused.ec) break;
  }
  ctx.ex = executor_of(leases_);
  ctx.token = highest_fencing_token();
  return ctx;
}

}  // namespace mongolock
