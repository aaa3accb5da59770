// semaphore: N permits of one name, each a lock. An acquire looks once at each permit (from a
// random one, so that acquirers spread over the permits), then waits on all of them at once and
// keeps the first granted.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "engine/access.hpp"
#include "model/document_name.hpp"
#include "primitives/permits.hpp"
#include "engine/provider_impl.hpp"
#include "engine/spawn.hpp"
#include "engine/timeout_check.hpp"
#include "mongolock/semaphore.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = std::chrono::steady_clock;

semaphore::semaphore(const lock& prototype, std::string name, int permits, const char* kind)
    : state_(std::make_shared<detail::semaphore_state>()) {
  state_->p = detail::access::impl(prototype);
  state_->name = std::move(name);
  state_->kind = kind;
  state_->permits = permits;
  if (!detail::check_permits(*state_, nullptr))
    for (int k = 1; k <= permits; ++k)
      state_->slots.push_back(detail::access::make_lock(state_->p, detail::permit_name(state_->name, k)));
}

const std::string& semaphore::name() const noexcept { return state_->name; }
int semaphore::permits() const noexcept { return state_->permits; }

asio::any_io_executor semaphore::executor_of(const shared& s) noexcept { return s->p->ex; }

void semaphore::start(shared s, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout,
                      diagnostics* d, handler h) {
  auto strand = asio::make_strand(s->p->ex);
  std::string why;
  auto ec = detail::check_permits(*s, &why);
  if (!ec) ec = detail::check_acquire_timeout(timeout, &why);
  if (!ec && s->p->closing()) {
    ec = asio::error::operation_aborted;
    why = "the provider is shutting down";
  }
  if (ec) {
    if (d) d->reason = why;
    auto fail = [](error_code e) -> asio::awaitable<std::tuple<error_code, lease>> { co_return std::tuple{e, lease{}}; };
    return detail::spawn_op(strand, fail(ec), std::move(h));
  }
  // One timeout for the whole call: the provider's unless given (its 0 means never).
  if (!timeout && s->p->opts.acquire_timeout.count() > 0) timeout = s->p->opts.acquire_timeout;
  detail::spawn_op(strand, detail::acquire_permit(std::move(s), mode == detail::acquire_mode::wait, false, timeout, d),
                   std::move(h));
}

}  // namespace mongolock
