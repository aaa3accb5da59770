// provider::async_shutdown on the in-memory store: a cancelled acquire whose
// take lands late used to be given back by a background task nothing waited for, so a process
// that exited right after left the lock held until expiry.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <thread>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

std::future<error_code> shutdown(engine& e, ml::diagnostics* d = nullptr) {
  return engine::ec_future([&](auto h) {
    auto p = ml::detail::access::make_provider(e.p);
    if (d) p.async_shutdown(*d, std::move(h));
    else p.async_shutdown(std::move(h));
  });
}

// An acquire started with a callback, as a future of its error code (the lease is dropped).
std::future<error_code> acquire_in_background(engine& e, const std::string& name, std::chrono::milliseconds t,
                                              asio::cancellation_slot slot = {}) {
  auto done = std::make_shared<std::promise<error_code>>();
  e.lock(name).async_acquire_for(
      t, asio::bind_cancellation_slot(slot, [done](error_code ec, ml::lease) { done->set_value(ec); }));
  return done->get_future();
}

// An acquire of NAME whose take is applied at once but answered `hang` later, cancelled once the
// take is out (observed, not assumed after a fixed time): it ends as cancelled.
void cancel_an_acquire_whose_take_is_in_flight(engine& e, const std::string& name, std::chrono::milliseconds hang) {
  e.store->inject(op::take, fault(fault::kind::hang, hang));
  asio::cancellation_signal cancel;
  auto acquired = acquire_in_background(e, name, 5s, cancel.slot());
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::take) == 1; }, 1s));
  cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(acquired, 1s));
  BOOST_TEST((acquired.get() == asio::error::operation_aborted));
}

ml::detail::lock_doc held_by(std::string owner) {
  auto d = test::free_doc(7);
  d.held.owner = std::move(owner);
  return d;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shutdown_suite)

// The take is applied at once but its reply takes 1000 ms; the acquire is cancelled once the take
// is out. It gives the take back as it ends, without waiting for the reply: a process may end
// before it. The give-back runs in the background: the lock is observed free, and the release
// must have reached the store before the take's reply was due.
BOOST_AUTO_TEST_CASE(a_cancelled_take_is_given_back_before_its_reply_comes) {
  engine e;
  cancel_an_acquire_whose_take_is_in_flight(e, "a", 1000ms);
  BOOST_REQUIRE(run_until(e, [&] { return e.store->get("a").held.owner.empty(); }, 1s));
  std::optional<steady::time_point> taken, released;
  for (auto& c : e.store->calls()) {
    if (c.what == op::take && c.name == "a" && !taken) taken = c.at;
    if (c.what == op::release && c.name == "a" && !released) released = c.at;
  }
  BOOST_REQUIRE((taken && released));
  BOOST_TEST((*released < *taken + 1000ms), "released before the take's reply");
}

// As above, but that first give-back finds no server: shutdown must not complete before the late
// grant has been given back (by its late reply, or the retry).
BOOST_AUTO_TEST_CASE(cancel_in_flight_then_shutdown_leaves_the_lock_free) {
  engine e;
  e.store->inject(op::release, fault(fault::kind::unavailable));
  // 300 ms: the reply must come within the 1 s that shutdown waits for background work.
  cancel_an_acquire_whose_take_is_in_flight(e, "a", 300ms);
  // The take landed (applied as it arrived); the give-back failed. Which frees the lock first, the
  // give-back's retry or the late reply's own give-back, is a matter of timing: only that it is
  // free once shutdown completes is claimed.
  BOOST_TEST(e.store->count(op::release) >= 1u, "the give-back was tried");
  auto done = shutdown(e);
  BOOST_REQUIRE(e.wait(done, 3s));
  const auto ec = done.get();
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(e.store->get("a").held.owner.empty(), "free when shutdown completes, not held until expiry");
}

// Shutdown while a take is in flight and the acquire is not cancelled: the grant arrives after
// the live leases were collected, so the acquire gives it back instead of handing out a lease.
// The take's reply comes 1000 ms after it is sent, and shutdown starts once it is out; 5 s leases
// so that the reply is still in time for a grant (a take is bounded by sent + E - m:
// docs/design.md section 4).
BOOST_AUTO_TEST_CASE(grant_arriving_during_shutdown_is_given_back) {
  engine e(fast(5000ms));
  e.store->inject(op::take, fault(fault::kind::hang, 1000ms));
  auto acquired = acquire_in_background(e, "a", 5s);
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::take) == 1; }, 1s));
  auto done = shutdown(e);
  BOOST_REQUIRE(e.wait(done, 3s));
  BOOST_TEST(!done.get());
  BOOST_REQUIRE(acquired.wait_for(0s) == std::future_status::ready);
  BOOST_TEST((acquired.get() == asio::error::operation_aborted));
  BOOST_TEST(e.store->get("a").held.owner.empty());
}

// As above, for an acquire that may be in the line: its join was answered with an error and
// lands late (400 ms), after its take saw an empty line and was sent (a take that does not remove
// the entry). The grant refused by shutdown ends the acquire without a lease, so it leaves the
// line as a give-up does (docs/design.md section 7, point 8); before, the entry stayed and cost
// the waiters behind it a window, or a later holder handed the lock to an owner id nobody renews.
BOOST_AUTO_TEST_CASE(a_grant_refused_by_shutdown_leaves_the_line) {
  engine e(fast(5000ms));
  auto them = other_provider(e, fast(5000ms));
  auto theirs = wait_for_lock(them, "a");
  BOOST_REQUIRE(run_until(e, [&] { return theirs->done; }, 1s));
  BOOST_REQUIRE(!theirs->ec);
  e.store->inject(op::join_line, fault(fault::kind::apply_late, 400ms));
  e.store->inject(op::take, fault(fault::kind::pass));  // our blind take: the lock is theirs
  e.store->inject(op::take, fault(fault::kind::hang, 1500ms));  // room for a stalled run; its bound is 4 s
  auto acquired = acquire_in_background(e, "a", 5s);
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::join_line) == 1; }, 1s));
  auto released = engine::ec_future([&](auto h) { theirs->held.async_release(h); });  // before our next read
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::take) == 3; }, 1s));  // theirs, our blind one, ours
  BOOST_REQUIRE(e.wait(released, 1s));
  auto done = shutdown(e);
  BOOST_REQUIRE(e.wait(done, 5s));
  BOOST_TEST(!done.get());
  BOOST_REQUIRE(acquired.wait_for(0s) == std::future_status::ready);
  BOOST_TEST((acquired.get() == asio::error::operation_aborted));
  BOOST_REQUIRE(e.store->count(op::join_line) == 1u);  // the only join: the late one
  const auto doc = e.store->get("a");
  BOOST_TEST(doc.held.owner.empty());
  BOOST_TEST(doc.line.empty(), doc.line.size() << " entry(ies) left in the line");
}

BOOST_AUTO_TEST_CASE(shutdown_releases_leases_wakes_waiters_and_refuses_new_acquisitions) {
  engine e;
  auto [ec, held] = e.acquire("a", 1s);
  BOOST_REQUIRE(!ec);
  auto ended = engine::ec_future([&, &held = held](auto h) { held.async_wait_lost(h); });
  e.store->put("b", held_by("ffffffffffffffffffffffffffffffff"));
  auto waiting = acquire_in_background(e, "b", 10s);
  e.run_for(50ms);
  BOOST_REQUIRE(waiting.wait_for(0s) != std::future_status::ready);

  const auto started = steady::now();
  auto done = shutdown(e);
  BOOST_REQUIRE(e.wait(done, 3s));
  BOOST_TEST(!done.get());
  BOOST_TEST((steady::now() - started < 2s), "a waiting acquire (10 s) is woken, not waited out");
  BOOST_REQUIRE(ended.wait_for(0s) == std::future_status::ready);
  BOOST_TEST((ended.get() == ml::errc::released));
  BOOST_TEST(e.store->get("a").held.owner.empty());
  BOOST_REQUIRE(waiting.wait_for(0s) == std::future_status::ready);
  BOOST_TEST((waiting.get() == asio::error::operation_aborted));

  const auto calls = e.store->calls().size();
  auto late = acquire_in_background(e, "c", 1s);
  BOOST_REQUIRE(e.wait(late, 1s));
  BOOST_TEST((late.get() == asio::error::operation_aborted));
  BOOST_TEST(e.store->calls().size() == calls, "refused without a server call");
  auto again = shutdown(e);
  BOOST_REQUIRE(e.wait(again, 1s));
  BOOST_TEST(!again.get(), "idempotent");
}

// The server stays unreachable through the whole retry ladder (0.25, 1, 4 s): shutdown says so
// instead of reporting a clean exit.
BOOST_AUTO_TEST_CASE(shutdown_reports_a_release_that_gave_up) {
  engine e(fast(10s));
  auto [ec, held] = e.acquire("a", 1s);
  BOOST_REQUIRE(!ec);
  for (int i = 0; i < 4; ++i) e.store->inject(op::release, fault(fault::kind::unavailable));
  ml::diagnostics d;
  auto done = shutdown(e, &d);
  BOOST_REQUIRE(e.wait(done, 8s));
  BOOST_TEST((done.get() == ml::errc::server_unavailable));
  BOOST_TEST(d.reason == "background release of 'a' failed: no server selected (the lock expires on its own)");
  BOOST_TEST(e.store->count(op::release) == 4u);
  BOOST_TEST(e.store->get("a").held.owner == held.owner_id(), "left to expire on its own");
}

// Four threads run the context and the leases live on their own strands: shutdown hops to each
// lease's strand and must come back to its own before arming its timer (a review found it did
// not: the idle wake-up could race the wait and shutdown would sit out its 10 s bound).
BOOST_AUTO_TEST_CASE(shutdown_on_a_multi_threaded_context_completes_when_idle) {
  asio::io_context io;
  auto store = std::make_shared<test::memory_store>(io.get_executor());
  auto p = std::make_shared<ml::detail::provider_impl>(io.get_executor(), store, fast(10s), nullptr);
  auto work_guard = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { io.run(); });
  std::vector<ml::lease> leases;
  for (int i = 0; i < 20; ++i) {
    std::promise<ml::lease> got;
    ml::detail::access::make_lock(p, "mt" + std::to_string(i)).async_acquire_for(1s, [&](error_code ec, ml::lease l) {
      BOOST_CHECK(!ec);
      got.set_value(std::move(l));
    });
    leases.push_back(got.get_future().get());
  }
  const auto started = steady::now();
  std::promise<error_code> done;
  ml::detail::access::make_provider(p).async_shutdown([&](error_code ec) { done.set_value(ec); });
  auto f = done.get_future();
  const bool ready = f.wait_for(5s) == std::future_status::ready;
  const auto took = steady::now() - started;
  work_guard.reset();
  io.stop();
  for (auto& t : threads) t.join();
  BOOST_REQUIRE(ready);
  BOOST_TEST(!f.get());
  BOOST_TEST((took < 3s), "completed when idle, not at its 10 s bound");
  for (int i = 0; i < 20; ++i) BOOST_TEST(store->get("mt" + std::to_string(i)).held.owner.empty());
}

BOOST_AUTO_TEST_SUITE_END()
