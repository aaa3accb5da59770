#include "primitives/compose.hpp"
#include "model/clocks.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/acquire.hpp"
#include "engine/lease_state.hpp"
#include "engine/poll_group.hpp"
#include "engine/provider_impl.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = detail::steady_clock;

engine_ref::engine_ref(const lock& any) noexcept : p_(access::impl(any)) {}

asio::any_io_executor engine_ref::executor() const noexcept { return p_->ex; }
bool engine_ref::closing() const noexcept { return p_->closing(); }

std::optional<std::chrono::milliseconds> engine_ref::timeout_or_default(std::optional<std::chrono::milliseconds> given) const {
  if (given) return given;
  if (p_->opts.acquire_timeout.count() > 0) return p_->opts.acquire_timeout;
  return std::nullopt;
}

std::chrono::milliseconds engine_ref::expiry() const noexcept { return p_->opts.expiry; }
std::uint64_t engine_ref::next_seed() const { return p_->next_seed(); }

lock engine_ref::make_lock(std::string name, bool plain) const {
  return access::make_lock(p_, std::move(name), nullptr, plain);
}

asio::awaitable<outcome<declaration>> engine_ref::declare(std::string name, declaration mine, steady_deadline deadline) const {
  co_return co_await p_->ops.declare(name, mine, deadline);
}

asio::awaitable<outcome<lock_doc>> engine_ref::read(std::string name) const {
  co_return co_await p_->ops.read(name, read_mode::primary);
}

asio::awaitable<outcome<std::vector<lock_doc>>> engine_ref::read_each(std::vector<std::string> names,
                                                                     steady_deadline deadline) const {
  co_return co_await p_->ops.read_each(names, read_mode::majority, deadline);
}

std::shared_ptr<void> engine_ref::gather(const std::vector<std::string>& names) const {
  return p_->grouped->gather(p_->ex, names);
}

std::shared_ptr<void> engine_ref::gather_reads(const std::vector<std::string>& names) const {
  return p_->grouped->gather_reads(p_->ex, names);
}

asio::awaitable<outcome<bool>> write_value(const std::shared_ptr<lease_state>& st, std::string value) {
  auto p = st->prov;
  co_return co_await p->ops.proclaim(st->name, st->owner, st->token, value);
}

error_code ended(const lease_state& st) noexcept {
  switch (st.phase.load()) {
    case lease_phase::lost: return make_error_code(errc::lease_lost);
    case lease_phase::released: return make_error_code(errc::released);
    case lease_phase::held: break;
  }
  return {};
}

strand_type strand_of(const lease_state& st) { return st.strand; }

steady_deadline deadline_of(std::optional<std::chrono::milliseconds> timeout) {
  if (timeout && timeout->count() > 0) return steady::now() + *timeout;
  return std::nullopt;
}

std::optional<std::chrono::milliseconds> left_until(steady_deadline deadline) {
  if (!deadline) return std::nullopt;
  return std::chrono::ceil<std::chrono::milliseconds>(*deadline - steady::now());
}

std::vector<std::string> names_of(const std::vector<lock>& locks) {
  std::vector<std::string> names;
  names.reserve(locks.size());
  for (const auto& l : locks) names.push_back(l.name());
  return names;
}

bool cancelled(const asio::cancellation_state& s) noexcept { return s.cancelled() != asio::cancellation_type::none; }

asio::awaitable<std::vector<error_code>> release_together(std::vector<lease>& held, std::vector<diagnostics>& diags) {
  diags.assign(held.size(), diagnostics{});  // sized before any release points into it
  std::vector<std::string> names;
  std::shared_ptr<provider_impl> p;
  for (const auto& l : held) {
    if (!l.held()) continue;  // its release makes no store call: nothing to wait for
    names.push_back(l.name());
    if (!p) p = access::state(l)->prov;
  }
  // Held until every release has reached the store (or the gathering's bound passed).
  const auto gathered = p ? p->grouped->gather(p->ex, names) : nullptr;
  if (held.empty()) co_return std::vector<error_code>{};
  std::vector<decltype(held.front().async_release(diags.front(), asio::deferred))> ops;
  ops.reserve(held.size());
  for (std::size_t i = 0; i < held.size(); ++i) ops.push_back(held[i].async_release(diags[i], asio::deferred));
  auto group = asio::experimental::make_parallel_group(std::move(ops));
  auto all = std::move(group).async_wait(asio::experimental::wait_for_all(), asio::use_awaitable);
  auto [order, codes] = co_await std::move(all);
  co_return codes;
}

asio::awaitable<void> release_each(std::vector<lease>& held) {
  std::vector<diagnostics> diags;
  auto all = release_together(held, diags);
  co_await std::move(all);
  held.clear();
}

asio::awaitable<void> give_back(std::vector<lease>& held, steady_deadline deadline) {
  if (!deadline) {
    auto all = release_each(held);
    co_await std::move(all);
    co_return;
  }
  auto mine = std::make_shared<std::vector<lease>>(std::move(held));
  held.clear();
  // On this strand (the caller's), as the releases' coroutine that ends the wait early.
  auto ex = co_await asio::this_coro::executor;
  auto until = std::make_shared<steady_timer>(ex, std::max(*deadline, steady_clock::now() + give_back_grace));
  auto done = std::make_shared<bool>(false);
  asio::co_spawn(
      ex,
      [mine, until, done]() -> asio::awaitable<void> {
        auto all = release_each(*mine);
        co_await std::move(all);
        *done = true;
        until->cancel();
      },
      // As spawn_op: a failure of the library's own code is not swallowed.
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  // co_spawn may run it here, up to its first wait, or to its end when nothing was left to send.
  if (!*done) co_await until->async_wait(asio::as_tuple(asio::use_awaitable));
}

std::shared_ptr<poll_group> new_poll_group(const lock& any) {
  return std::make_shared<poll_group>(access::impl(any));
}

void start_polled_acquire(const lock& l, acquire_mode m, std::optional<std::chrono::milliseconds> timeout,
                          diagnostics* d, std::shared_ptr<poll_group> group,
                          asio::any_completion_handler<void(boost::system::error_code, lease)> h) {
  start_acquire(access::impl(l), l.name(), access::timing(l), access::plain(l), m, timeout, d, std::move(h),
                std::move(group));
}

}  // namespace mongolock::detail
