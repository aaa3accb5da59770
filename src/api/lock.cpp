// A lock's acquire: a try or a timeout it refuses starts at once; a wait takes its provider's turn
// for the name first, or parks behind the acquire that has it (docs/design.md section 7); a
// try_taking_turn takes the turn if it is free (and is busy at once if not).
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "engine/acquire.hpp"
#include "engine/provider_impl.hpp"
#include "engine/timeout_check.hpp"
#include "mongolock/lock.hpp"

namespace mongolock {

void lock::start_acquire(impl_ptr p, std::string name, std::shared_ptr<const lock_options> timing, bool plain,
                         detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                         acquire_handler h) {
  const auto since = std::chrono::steady_clock::now();
  // A try looks once and never parks; a timeout acquire_body will refuse is refused at once.
  const bool bad_timeout = static_cast<bool>(detail::check_acquire_timeout(timeout));
  const bool closing = p->closing();
  if (!detail::waits(mode) || bad_timeout || closing) {
    detail::name_turn turn;  // only a try_taking_turn's, and only if the turn is free
    if (mode == detail::acquire_mode::try_taking_turn && !bad_timeout && !closing) {
      auto key = name;  // copied before the turn is taken: nothing may throw between the two
      if (p->turns.take_if_free(key)) turn = detail::name_turn(p, std::move(key));
    }
    return detail::start_body(std::move(p), std::move(name), std::move(timing), plain, mode, timeout, d, since,
                              std::move(turn), std::move(h));
  }
  auto w = std::make_shared<detail::parked_acquire>(std::move(h));
  w->name = std::move(name);
  w->timing = std::move(timing);
  w->plain = plain;
  w->diag = d;
  w->since = since;
  const auto wait_for = timeout.value_or((w->timing ? *w->timing : p->opts).acquire_timeout);
  if (wait_for.count() > 0) w->deadline = since + wait_for;
  if (!p->turns.enter(w->name, w, [&] { detail::park(p, w); })) return;
  // The turn is ours: run now, with nothing parked.
  detail::name_turn turn(p, w->name);
  detail::start_body(std::move(p), std::move(w->name), std::move(w->timing), plain, mode, timeout, d, since,
                     std::move(turn), std::move(w->handler));
}

boost::asio::any_io_executor lock::executor_of(const detail::provider_impl& p) noexcept { return p.ex; }

}  // namespace mongolock
