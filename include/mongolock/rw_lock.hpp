#pragma once
// A reader-writer lock (provider::create_rw_lock): many readers or one writer per name.
//
// Built from locks: NAME's readers share max_readers permits ("NAME#1" .. "NAME#R", as a
// semaphore of R permits: a reader holds one); a writer first takes "NAME#w" (one writer at a
// time), then every permit. So a writer excludes every reader, readers exclude no one but a
// writer, and every part keeps what a lock guarantees: renewal, guarded work cancelled when a
// lease is lost, takeover of a crashed holder's parts by observed expiry. R is declared under
// NAME: a program asking for another R (or for a semaphore of that name) gets
// errc::declaration_mismatch.
//
// Fencing: a writer's token is multi_lease::highest_fencing_token(). It is above the token of
// every reader it excluded (each permit's token rises with each holder) and of every earlier
// writer (which held the same permits). A reader's token orders it only on its own permit.
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
#include "mongolock/lock.hpp"
#include "mongolock/multi_lock.hpp"
#include "mongolock/semaphore.hpp"

namespace mongolock {

struct rw_options {
  // How many readers may hold the lock at once (1..limits::max_permits); a writer takes as many
  // permits, so this is also what one write acquisition costs in server calls.
  int max_readers = 16;
  // A waiting reader's first look never takes a permit that others (a writer among them) are in
  // line for, so a stream of readers cannot keep a waiting writer out. Off: a reader takes any
  // free permit at once, and readers can starve writers. A try (timeout 0) never queues and
  // ignores the lines either way, as lock::async_try_acquire does.
  bool prefer_writers = true;
};

namespace detail {
struct rw_state;
}  // namespace detail

// Made by provider::create_rw_lock. Cheap to copy; no server state until acquired. Thread
// safety: as lock. Handlers default to the provider's executor.
//
// Its two sides are views with the acquire set (detail/acquire_surface.hpp), as Redisson's
// RReadWriteLock::readLock()/writeLock(): `rw.reader().async_acquire()`,
// `rw.writer().async_try_acquire({.within = 2s}, d)`. A view is a copy of the rw_lock's handle:
// cheap, and it may outlive the rw_lock it came from.
class rw_lock {
  using shared = std::shared_ptr<detail::rw_state>;
  using read_handler = boost::asio::any_completion_handler<void(boost::system::error_code, lease)>;
  using write_handler = boost::asio::any_completion_handler<void(boost::system::error_code, multi_lease)>;
  static void start_read(shared, detail::acquire_mode, std::optional<std::chrono::milliseconds>, diagnostics*,
                         read_handler);
  static void start_write(shared, detail::acquire_mode, std::optional<std::chrono::milliseconds>, diagnostics*,
                          write_handler);
  template <class Value, auto begin>
  class side;

 public:
  // The read side: a read permit, as a semaphore's acquire (one look at each permit, then a wait
  // on all), completing with void(error_code, lease). With rw_options::prefer_writers a waiting
  // reader's first look leaves permits that others are in line for; a try ignores the lines
  // either way. Extra errors: a semaphore's (errc::invalid_options for max_readers outside
  // 1..limits::max_permits, errc::declaration_mismatch).
  using reader_view = side<lease, &rw_lock::start_read>;
  // The write side: "NAME#w", then every permit at once (each waited for as lock::async_acquire
  // does; their looks go out together, one find per poll), within one timeout for the whole, completing with void(error_code, multi_lease): the
  // leases of "NAME#w" and of every permit; fence with highest_fencing_token(). A try looks at
  // "NAME#w", then at each permit in order, stopping at the first held (errc::busy;
  // errc::timeout if `within` ran out before every part was looked at, the reason naming the
  // first not looked at). On any failure everything taken is released before completion; a part
  // lost while the others are awaited makes it release all and start over. Extra errors:
  // invalid_options, invalid_name, declaration_mismatch.
  using writer_view = side<multi_lease, &rw_lock::start_write>;

  const std::string& name() const noexcept;
  const rw_options& options() const noexcept;

  reader_view reader() const;
  writer_view writer() const;

 private:
  friend class provider;
  rw_lock(const lock& prototype, std::string name, rw_options o);
  static boost::asio::any_io_executor executor_of(const shared&) noexcept;

  shared state_;
};

// One side of a rw_lock: `begin(state, mode, timeout, d, handler)` starts its acquire.
template <class Value, auto begin>
class rw_lock::side : public detail::acquire_surface<side<Value, begin>, Value> {
 private:
  friend class rw_lock;
  friend class detail::acquire_surface<side, Value>;
  explicit side(shared s) : state_(std::move(s)) {}
  template <class Token>
  auto start(detail::acquire_request r, diagnostics* d, Token&& token) const {
    return detail::async_op<void(boost::system::error_code, Value)>(
        detail::initiation(executor_of(state_),
                           [](auto h, shared st, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> t,
                              diagnostics* diag) { begin(std::move(st), mode, t, diag, std::move(h)); }),
        token, state_, r.mode, r.timeout, d);
  }
  shared state_;
};

inline rw_lock::reader_view rw_lock::reader() const { return reader_view(state_); }
inline rw_lock::writer_view rw_lock::writer() const { return writer_view(state_); }

}  // namespace mongolock
