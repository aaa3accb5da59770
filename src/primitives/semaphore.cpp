// semaphore: N permits of one name, each a lock. An acquire looks once at each permit (from a
// random one, so that acquirers spread over the permits), then waits on all of them at once and
// keeps the first granted.
#include "mongolock/semaphore.hpp"

#include "primitives/permits.hpp"

namespace mongolock {

namespace asio = boost::asio;

semaphore::semaphore(const lock& prototype, std::string name, int permits, const char* kind)
    : state_(std::make_shared<detail::semaphore_state>(detail::engine_ref(prototype))) {
  state_->name = std::move(name);
  state_->kind = kind;
  state_->permits = permits;
  if (!detail::check_permits(*state_, nullptr))
    for (int k = 1; k <= permits; ++k)
      state_->slots.push_back(state_->engine.make_lock(detail::permit_name(state_->name, k), false));
}

const std::string& semaphore::name() const noexcept { return state_->name; }
int semaphore::permits() const noexcept { return state_->permits; }

asio::any_io_executor semaphore::executor_of(const shared& s) noexcept { return s->engine.executor(); }

void semaphore::start_acquire(shared s, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout,
                              diagnostics* d, handler h) {
  std::string why;
  auto ec = detail::check_permits(*s, &why);
  if (!ec) ec = detail::check_acquire_timeout(timeout, &why);
  if (!ec && s->engine.closing()) {
    ec = asio::error::operation_aborted;
    why = "the provider is shutting down";
  }
  const auto e = s->engine;
  auto body = [&] {
    // One timeout for the whole call: the provider's unless given.
    auto t = e.timeout_or_default(timeout);
    return detail::acquire_permit(std::move(s), mode, false, t, d);
  };
  detail::start_checked(e, ec, why, d, body, std::move(h));
}

}  // namespace mongolock
