#pragma once
// The one door from the primitives to the engine (docs/design.md section 12): semaphore, rw_lock,
// multi_lock and election are built from locks and leases through their public operations, and
// take from the engine only what is here: the provider behind a lock (its executor, shutdown state
// and defaults, the store calls of a declaration and an election's value), an acquire mode the
// public lock does not offer, and the shapes every primitive's operation shares (how it starts,
// its deadline, its cancellation, taking a whole set or giving it back). Only compose.hpp and
// compose.cpp include from src/engine/ (test/layers/check_layers.sh).
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/access.hpp"
#include "model/clocks.hpp"
#include "engine/spawn.hpp"
#include "engine/timeout_check.hpp"
#include "model/lock_document.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/lock.hpp"
#include "mongolock/multi_lock.hpp"

namespace mongolock::detail {

class poll_group;
using steady_deadline = std::optional<detail::steady_clock::time_point>;

// The provider behind a lock, as far as a primitive needs it.
class engine_ref {
 public:
  explicit engine_ref(const lock& any) noexcept;

  boost::asio::any_io_executor executor() const noexcept;
  // True once the provider began to shut down: a new operation is refused.
  bool closing() const noexcept;
  // One timeout for a whole operation: `given`, else the provider's acquire timeout (whose 0 means
  // none: nullopt).
  std::optional<std::chrono::milliseconds> timeout_or_default(std::optional<std::chrono::milliseconds> given) const;
  std::chrono::milliseconds expiry() const noexcept;
  std::uint64_t next_seed() const;
  // A lock of this provider. `plain`: a name the user gave (lock.hpp); a permit's lock is not.
  lock make_lock(std::string name, bool plain) const;

  // The store's declaration of `name`, recorded as `mine` if there is none yet.
  boost::asio::awaitable<outcome<declaration>> declare(std::string name, declaration mine, steady_deadline deadline) const;
  // `name`'s document, read from the primary.
  boost::asio::awaitable<outcome<lock_doc>> read(std::string name) const;
  // The documents of `names` in one find, majority read concern, in that order.
  boost::asio::awaitable<outcome<std::vector<lock_doc>>> read_each(std::vector<std::string> names,
                                                                   steady_deadline deadline) const;
  // The takes and releases the caller is about to make of `names`, one operation per name, go
  // out as one command (docs/design.md section 14). Keep the handle while those operations run:
  // dropping it sends at once whatever is held. Null when there is nothing to gather.
  std::shared_ptr<void> gather(const std::vector<std::string>& names) const;
  // The first read each of the caller's waits on `names` makes goes out in one find with the
  // others (docs/design.md section 10). Keep the handle while the waits start.
  std::shared_ptr<void> gather_reads(const std::vector<std::string>& names) const;

 private:
  std::shared_ptr<provider_impl> p_;
};

// The names of `locks`, in their order (a set's gathering, a semaphore's look at its permits).
std::vector<std::string> names_of(const std::vector<lock>& locks);

// A lock's acquire in any mode: a primitive's try looks at each member in the mode its
// try_options ask for (docs/design.md section 12), a permit's look uses acquire_mode::try_in_turn
// and a multi-lock's first look try_taking_turn, which the public lock does not offer.
template <class Token>
auto acquire(lock& l, acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d, Token&& token) {
  return access::acquire(l, m, timeout, d, std::forward<Token>(token));
}
inline multi_lease make_multi_lease(std::vector<lease> leases) { return access::make_multi_lease(std::move(leases)); }

// The waits of one acquire of several locks, polled together: woken at once and read with one
// find (src/engine/poll_group.hpp, docs/design.md section 10). For the locks of `any`'s provider.
std::shared_ptr<poll_group> new_poll_group(const lock& any);
// A lock's acquire as `acquire` above, whose wait joins `group` (null: none, as a plain lock's):
// at once, or when its turn comes if it is parked behind another acquire of the name.
void start_polled_acquire(const lock& l, acquire_mode m, std::optional<std::chrono::milliseconds> timeout,
                          diagnostics* d, std::shared_ptr<poll_group> group,
                          boost::asio::any_completion_handler<void(boost::system::error_code, lease)> h);
template <class Token>
auto acquire_polled(const lock& l, acquire_mode m, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                    std::shared_ptr<poll_group> group, Token&& token) {
  // Everything by value: a deferred operation may start after `l` is gone (acquire_surface.hpp).
  return async_op<void(boost::system::error_code, lease)>(
      initiation(engine_ref(l).executor(),
                 [](auto h, lock l, acquire_mode m, std::optional<std::chrono::milliseconds> t, diagnostics* diag,
                    std::shared_ptr<poll_group> g) {
                   start_polled_acquire(l, m, t, diag, std::move(g), std::move(h));
                 }),
      token, l, m, timeout, d, std::move(group));
}

// An acquire of every lock of `locks` at once, each in mode `m` within `left`, as a parallel group
// for the caller to wait on as it needs; `diags[i]` gets lock i's reason (sized here, before any
// operation points into it). `poll_together`: their waits poll as one (a semaphore's permits, a
// writer's): one find per look at all of them, not one per lock (section 10).
inline auto acquire_each_at_once(std::vector<lock>& locks, acquire_mode m, std::optional<std::chrono::milliseconds> left,
                                 std::vector<diagnostics>& diags, bool poll_together = false) {
  diags.assign(locks.size(), diagnostics{});
  auto group = poll_together && !locks.empty() ? new_poll_group(locks[0]) : nullptr;
  using op = decltype(acquire_polled(locks[0], m, left, nullptr, group, boost::asio::deferred));
  std::vector<op> ops;
  ops.reserve(locks.size());
  for (std::size_t i = 0; i < locks.size(); ++i)
    ops.push_back(acquire_polled(locks[i], m, left, &diags[i], group, boost::asio::deferred));
  return boost::asio::experimental::make_parallel_group(std::move(ops));
}

// ---- an election's value on its lease ----
// Writes `value` as the election value of the lease's holder: true if written, false if the
// lease's (owner, token) no longer holds the document.
boost::asio::awaitable<outcome<bool>> write_value(const std::shared_ptr<lease_state>& st, std::string value);
inline const std::shared_ptr<lease_state>& state_of(const lease& l) noexcept { return access::state(l); }
// {} while the lease is held; errc::lease_lost or errc::released once it ended.
boost::system::error_code ended(const lease_state& st) noexcept;
strand_type strand_of(const lease_state& st);

// ---- the shapes of a primitive's operation ----

// How every primitive's operation starts: on a new strand of the provider, `make_body()` runs as
// the operation; or, if a check before it failed (`ec`), the operation completes at once with `ec`
// and its reason (`why`, into `d`), without a body.
template <class... Rest, class MakeBody>
void start_checked(const engine_ref& e, boost::system::error_code ec, const std::string& why, diagnostics* d,
                   MakeBody make_body,
                   boost::asio::any_completion_handler<void(boost::system::error_code, Rest...)> h) {
  auto strand = boost::asio::make_strand(e.executor());
  if (!ec) return spawn_op(strand, make_body(), std::move(h));
  if (d) d->reason = why;
  auto fail = [](boost::system::error_code code) -> boost::asio::awaitable<std::tuple<boost::system::error_code, Rest...>> {
    co_return std::tuple<boost::system::error_code, Rest...>{code, Rest{}...};
  };
  spawn_op(strand, fail(ec), std::move(h));
}

// The deadline of an operation with `timeout`: none without one, and none for a try (0).
steady_deadline deadline_of(std::optional<std::chrono::milliseconds> timeout);
// `deadline` as the timeout of one more acquire: nullopt without a deadline; 0 or less once passed.
std::optional<std::chrono::milliseconds> left_until(steady_deadline deadline);

// Whether the caller has asked the running body to stop: `cancelled(co_await
// this_coro::cancellation_state)`. (A body begins with reset_cancellation_state and
// throw_if_cancelled(false) in its own frame: a nested coroutine for them would already throw at
// its co_await if the cancellation came before the body started.)
bool cancelled(const boost::asio::cancellation_state& s) noexcept;

// Why a try of several locks (a semaphore's permits, a rw_lock's parts, a multi-lock's members)
// ended with errc::timeout: its time (try_options::within, else the acquire timeout) ran out
// before it could look at `next`, so whether `next` was free is not known.
inline std::string try_out_of_time(const lock& next) {
  return "the try ran out of time before it could look at '" + next.name() + "'";
}

// What became of one member of a set (`label`: "lock 'NAME'", "permit 'NAME#k'"), for the
// caller's diagnostics: "<label>: <its reason>", or "<label> is held" for a busy member (a busy
// lock's own diagnostics say nothing: error.hpp).
inline std::string member_reason(const std::string& label, boost::system::error_code ec, const diagnostics& d) {
  if (!d.reason.empty()) return label + ": " + d.reason;
  return ec == errc::busy ? label + " is held" : label;
}

// Releases every lease of `held` at once, their releases as one command (docs/design.md section
// 14), and waits for all: codes[i] and diags[i] are held[i]'s.
boost::asio::awaitable<std::vector<boost::system::error_code>> release_together(std::vector<lease>& held,
                                                                                std::vector<diagnostics>& diags);
// Releases every lease of `held` (release_together) and waits (a failed release: that lock expires
// or is retried on its own); `held` is empty afterwards.
boost::asio::awaitable<void> release_each(std::vector<lease>& held);
// Gives back what an acquisition of several took (release_each), waiting for it until the later
// of `deadline` and `give_back_grace` from now (a timeout found at the deadline itself): the
// acquisition's timeout bounds the whole call, a give-back to a slow or unreachable server
// included (docs/design.md section 8). The releases then go on in the background, each holding
// its provider's work ticket (a shutdown waits for them); `held` is empty afterwards. Call on a
// strand. Without a deadline the give-back is waited for.
inline constexpr std::chrono::milliseconds give_back_grace{1000};
boost::asio::awaitable<void> give_back(std::vector<lease>& held, steady_deadline deadline);

// What a take of a whole set reports: its error and reason, the leases it got.
struct set_take {
  boost::system::error_code ec;
  std::string why;
};
// Takes a whole set of locks as one: `take(held)` takes its members into `held` (in the order of
// the set) and says how it went. The set is handed out only if no error came and every one of
// `size` leases is still held: one taken early may have been lost while a later one was awaited,
// and then everything is given back and the set taken again from the start (`take` keeps its
// own deadline). On an error everything taken is given back and the error reported.
template <class Take>
boost::asio::awaitable<std::tuple<boost::system::error_code, multi_lease>> take_whole_set(Take take, std::size_t size,
                                                                                          steady_deadline deadline,
                                                                                          diagnostics* d) {
  for (;;) {
    std::vector<lease> held;
    held.reserve(size);  // a lease a member's wait watches stays in place
    auto taking = take(held);
    set_take r = co_await std::move(taking);
    bool whole = !r.ec && held.size() == size;
    for (const auto& l : held) whole = whole && l.held();
    if (whole) {
      if (d) d->reason.clear();
      co_return std::tuple{boost::system::error_code{}, make_multi_lease(std::move(held))};
    }
    auto giving_back = give_back(held, deadline);
    co_await std::move(giving_back);
    if (r.ec) {
      if (d) d->reason = r.why;
      co_return std::tuple{r.ec, multi_lease{}};
    }
  }
}

}  // namespace mongolock::detail
