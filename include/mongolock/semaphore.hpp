#pragma once
// A counting semaphore (provider::create_semaphore): at most N holders of one name at a time.
// Each permit is a lock of its own, named "NAME#1" .. "NAME#N", with its own lease and fencing
// token, so what a lock guarantees holds for every permit: renewal on a strand, guarded work
// cancelled when the lease is lost (before anyone else can take that permit), a crashed holder's
// permit taken over after its observed expiry, tokens that only increase on that permit.
//
// N is declared under NAME by the first user and never changes: a program that asks for another
// N (or for a rw_lock of that name) fails with errc::declaration_mismatch instead of admitting
// its own number of holders.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "mongolock/error.hpp"
#include "mongolock/detail/acquire_surface.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/limits.hpp"
#include "mongolock/lock.hpp"

namespace mongolock {

namespace detail {
struct semaphore_state;
}  // namespace detail

// Made by provider::create_semaphore. Cheap to copy (copies share the declaration check); no
// server state until acquired. Thread safety: as lock. Handlers default to the provider's executor.
//
// Acquire (the set of detail/acquire_surface.hpp), completing with void(error_code, lease) whose
// name() is the permit's ("NAME#k"). A wait first looks once at each permit, starting at a random
// one, taking the first that is free and has nobody in its line (a newcomer never overtakes
// waiters); then it waits on every permit at once (each as lock::async_acquire: backoff, the
// permit's line, observed expiry; their looks go out together, one find of every permit per
// poll), keeping the first granted and releasing any other granted meanwhile. The timeout is for the whole call. A try looks at each permit and, not queuing,
// ignores their lines: a waiter that crashed while in line cannot make it busy (only a waiting
// acquire removes such an entry, after one observation window); errc::busy when every permit
// looked at was held, errc::timeout when `within` ran out before every permit was looked at (the
// reason names the first one not looked at). Extra errors: errc::invalid_name (a name whose
// permit names are not valid lock names), errc::invalid_options (permits outside
// 1..limits::max_permits), errc::declaration_mismatch.
class semaphore : public detail::acquire_surface<semaphore, lease> {
 public:
  const std::string& name() const noexcept;
  int permits() const noexcept;

 private:
  friend class provider;
  friend class rw_lock;
  using shared = std::shared_ptr<detail::semaphore_state>;
  using handler = boost::asio::any_completion_handler<void(boost::system::error_code, lease)>;
  // `kind`: what the declaration records ("semaphore", or "rw_lock" for a rw_lock's read permits).
  semaphore(const lock& prototype, std::string name, int permits, const char* kind = "semaphore");

  static boost::asio::any_io_executor executor_of(const shared&) noexcept;
  static void start_acquire(shared, detail::acquire_mode, std::optional<std::chrono::milliseconds>, diagnostics*, handler);

  // The one hook of the acquire set.
  friend class detail::acquire_surface<semaphore, lease>;
  template <class Token>
  auto start(detail::acquire_request r, diagnostics* d, Token&& token) const {
    return detail::async_op<void(boost::system::error_code, lease)>(
        detail::initiation(executor_of(state_),
                           [](auto h, shared s, detail::acquire_mode mode,
                              std::optional<std::chrono::milliseconds> t, diagnostics* diag) {
                             start_acquire(std::move(s), mode, t, diag, std::move(h));
                           }),
        token, state_, r.mode, r.timeout, d);
  }

  shared state_;
};

}  // namespace mongolock
