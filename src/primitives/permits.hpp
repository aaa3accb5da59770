#pragma once
// What a semaphore and a rw_lock share: the permits of one name ("NAME#1" .. "NAME#N", each a
// lock), the declaration of their number, and the acquire of one permit (permits.cpp).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "mongolock/lock.hpp"
#include "model/clocks.hpp"
#include "primitives/compose.hpp"

namespace mongolock::detail {

struct semaphore_state {
  explicit semaphore_state(engine_ref e) : engine(std::move(e)) {}
  const engine_ref engine;
  std::string name, kind;
  int permits = 0;
  std::vector<lock> slots;  // the permits' locks; empty when `permits` is out of range
  // Set once the store confirmed the declaration: later acquires of this object skip it.
  std::atomic<bool> declared{false};
};

// The name of permit k (1-based) of `name`.
std::string permit_name(const std::string& name, int k);

// {} if `s` is usable: its name, its permit names and its number of permits; else why not.
boost::system::error_code check_permits(const semaphore_state& s, std::string* why);

// Records (or finds) the declaration of `s` in the store: {} when it matches, else
// errc::declaration_mismatch or the store's error (errc::timeout past `deadline`), with why.
// The driver of declare_fsm (src/sansio/declare_fsm.hpp), which decides.
boost::asio::awaitable<boost::system::error_code> ensure_declared(
    std::shared_ptr<semaphore_state> s, std::string& why,
    std::optional<detail::steady_clock::time_point> deadline);

// One permit of `s` (semaphore::async_acquire's body), on a strand: one look at each permit, then
// (if `mode` is wait) a wait on all of them. `overtake`, or a try (try_once, try_confirming: the
// look at each permit is made in that mode): the look takes a free permit even if others are in
// its line; else it leaves it to them.
boost::asio::awaitable<std::tuple<boost::system::error_code, lease>> acquire_permit(
    std::shared_ptr<semaphore_state> s, acquire_mode mode, bool overtake,
    std::optional<std::chrono::milliseconds> timeout, diagnostics* d);



// What went wrong with one permit, for the caller's diagnostics: "permit 'NAME#k': reason".
inline std::string permit_reason(const lock& slot, const diagnostics& d) {
  return member_reason("permit '" + slot.name() + "'", {}, d);
}

// A waiting acquire of every permit of `s` at once, each with the lock's whole waiting machinery
// (timeout `left`), as a parallel group for the caller to wait on as it needs; `diags[i]` gets
// permit i's reason (sized here, before any operation points into it). `mode`: wait_looked when
// the caller has just seen them held (each then starts with a read), else wait. Their waits poll
// together: one find per look at every permit still waited on (docs/design.md section 10).
inline auto wait_on_every_permit(semaphore_state& s, std::optional<std::chrono::milliseconds> left,
                                 std::vector<diagnostics>& diags, acquire_mode mode = acquire_mode::wait) {
  return acquire_each_at_once(s.slots, mode, left, diags, true);
}

}  // namespace mongolock::detail
