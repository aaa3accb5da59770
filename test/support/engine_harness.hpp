#pragma once
// The engine harness of engine_tests: a provider on the in-memory store, driven on one
// io_context thread, with helpers that run the context until an operation completes.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <vector>

#include "engine/access.hpp"
#include "engine/lease_state.hpp"
#include "engine/provider_impl.hpp"
#include "memory_store.hpp"
#include "mongolock/lock.hpp"
#include "mongolock/multi_lock.hpp"

namespace test {

namespace asio = boost::asio;
namespace ml = mongolock;
using namespace std::chrono_literals;
using boost::system::error_code;
using steady = mongolock::detail::steady_clock;

inline ml::lock_options fast(std::chrono::milliseconds expiry = 1000ms) {
  ml::lock_options o;
  o.expiry = expiry;  // margin = expiry / 10
  o.backoff_min = 5ms;
  o.backoff_max = 20ms;
  return o;
}

struct engine {
  asio::io_context io;
  std::shared_ptr<test::memory_store> store = std::make_shared<test::memory_store>(io.get_executor());
  std::shared_ptr<ml::detail::provider_impl> p;

  explicit engine(ml::lock_options o = fast())
      : p(std::make_shared<ml::detail::provider_impl>(io.get_executor(), store, o, nullptr)) {}
  // A fault injected for a single call that a grouped statement went past instead would make a
  // fault test pass without its fault (group_commit.hpp groups whatever is ready together).
  ~engine() {
    BOOST_CHECK_MESSAGE(store->bypassed_faults() == 0u,
                        store->bypassed_faults() << " grouped statement(s) went past a fault injected for a single call");
  }

  ml::lock lock(std::string name) { return ml::detail::access::make_lock(p, std::move(name)); }

  // Runs the io_context until `f` is ready or `limit` passes (leases keep timers alive forever).
  template <class T>
  bool wait(std::future<T>& f, std::chrono::milliseconds limit) {
    const auto end = steady::now() + limit;
    while (f.wait_for(0s) != std::future_status::ready && steady::now() < end) run_one();
    return f.wait_for(0s) == std::future_status::ready;
  }
  void run_for(std::chrono::milliseconds d) {
    const auto end = steady::now() + d;
    while (steady::now() < end) run_one();
  }
  // One handler, or 5 ms; a context that ran out of work is restarted for what comes next.
  void run_one() {
    if (io.stopped()) io.restart();
    io.run_one_for(5ms);
  }
  // async_acquire_for / async_try_acquire to completion, as (ec, lease).
  std::tuple<error_code, ml::lease> acquire(const std::string& name, std::optional<std::chrono::milliseconds> t,
                                            std::chrono::milliseconds limit = 5s) {
    auto l = lock(name);
    auto done = std::make_shared<std::promise<std::tuple<error_code, ml::lease>>>();
    auto f = done->get_future();
    auto h = [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); };
    if (t) l.async_acquire_for(*t, h);
    else l.async_try_acquire(h);
    BOOST_REQUIRE_MESSAGE(wait(f, limit), "acquire did not complete in time");
    return f.get();
  }
  error_code release(ml::lease& l) {
    auto f = ec_future([&](auto h) { l.async_release(h); });
    BOOST_REQUIRE(wait(f, 5s));
    return f.get();
  }
  // A callback completion as a future of its error_code.
  template <class Start>
  static std::future<error_code> ec_future(Start start) {
    auto done = std::make_shared<std::promise<error_code>>();
    start([done](error_code ec) { done->set_value(ec); });
    return done->get_future();
  }
};

// A second provider on the engine's store and io_context: another process, as far as a lock goes.
inline std::shared_ptr<ml::detail::provider_impl> other_provider(engine& e, ml::lock_options o = fast()) {
  return std::make_shared<ml::detail::provider_impl>(e.io.get_executor(), e.store, o, nullptr);
}

// A waiting acquire left running, and what it completed with.
struct waiter {
  error_code ec;
  ml::lease held;
  bool done = false;
};

// Starts a waiting acquire with a callback (async_acquire_for with a timeout, else
// async_acquire); its result lands in `out`.
inline void start_acquire(ml::lock l, std::shared_ptr<waiter> out, std::optional<std::chrono::milliseconds> timeout = {},
                          asio::cancellation_slot slot = {}) {
  auto h = asio::bind_cancellation_slot(slot, [out](error_code ec, ml::lease got) {
    out->ec = ec;
    out->held = std::move(got);
    out->done = true;
  });
  if (timeout) l.async_acquire_for(*timeout, std::move(h));
  else l.async_acquire(std::move(h));
}

inline std::shared_ptr<waiter> wait_for_lock(const std::shared_ptr<ml::detail::provider_impl>& p, const std::string& name,
                                             std::optional<std::chrono::milliseconds> timeout = {},
                                             asio::cancellation_slot slot = {}) {
  auto out = std::make_shared<waiter>();
  start_acquire(ml::detail::access::make_lock(p, name), out, timeout, slot);
  return out;
}

// An operation with a (error_code, result) completion, run to completion as a tuple.
template <class Result, class Start>
Result run_op(engine& e, Start s) {
  auto done = std::make_shared<std::promise<Result>>();
  auto f = done->get_future();
  s([done](error_code ec, auto got) { done->set_value({ec, std::move(got)}); });
  BOOST_REQUIRE_MESSAGE(e.wait(f, 5s), "the operation did not complete in time");
  return f.get();
}

// A multi_lease's release (a multi-lock's, a rw_lock writer's) to completion.
inline error_code release(engine& e, ml::multi_lease& m) {
  auto f = engine::ec_future([&](auto h) { m.async_release(h); });
  BOOST_REQUIRE(e.wait(f, 5s));
  return f.get();
}

// The error a ready future holds (thrown as a system_error), or none.
template <class T>
error_code error_of(std::future<T>& f) {
  try {
    f.get();
  } catch (const boost::system::system_error& x) {
    return x.code();
  }
  return {};
}

// Runs the engine until `done()` or `limit`; whether it is done.
inline bool run_until(engine& e, const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = steady::now() + limit;
  while (!done() && steady::now() < end) e.run_one();
  return done();
}

// The store's calls of kind `what` since call number `from` (e.store->calls().size() earlier).
inline std::vector<call_record> calls_since(engine& e, std::size_t from, op what) {
  const auto calls = e.store->calls();
  std::vector<call_record> out;
  for (auto i = from; i < calls.size(); ++i)
    if (calls[i].what == what) out.push_back(calls[i]);
  return out;
}

inline ml::detail::lock_doc free_doc(std::int64_t token) {
  ml::detail::lock_doc d;
  d.exists = true;
  d.held.token = token;
  d.held.expiry = 1000ms;
  return d;
}

// A lock held by "other", whose clock says it last renewed a day ago: probably crashed. Planted
// under a permit's name ("NAME#k") it holds that permit.
inline ml::detail::lock_doc held_by_a_silent_holder(std::chrono::milliseconds expiry) {
  auto d = free_doc(3);
  d.held.owner = "other";
  d.held.expiry = expiry;
  d.renewed_at_ms = ml::detail::wall_ms() - 86'400'000;
  return d;
}

}  // namespace test
