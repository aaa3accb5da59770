// Acquisition: try, timeout, cancellation (waiting and in flight), mutual exclusion in-process.
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "fixture.hpp"

using namespace test;
using boost::system::error_code;
namespace ml = mongolock;

BOOST_AUTO_TEST_SUITE(acquire)

BOOST_FIXTURE_TEST_CASE(try_acquire_on_held_lock_is_busy_then_succeeds_after_release, io_fixture) {
  auto a = make_provider(), b = make_provider();
  const auto name = unique("try");
  run([&]() -> asio::awaitable<void> {
    auto held = co_await a.create_lock(name).async_acquire();
    auto [ec, none] = co_await b.create_lock(name).async_try_acquire(asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::busy));
    BOOST_TEST(!none);
    co_await held.async_release();
    auto [ec2, got] = co_await b.create_lock(name).async_try_acquire(asio::as_tuple(asio::deferred));
    BOOST_TEST(!ec2);
    BOOST_TEST(got.held());
    BOOST_TEST(got.fencing_token() > held.fencing_token());
  }());
  BOOST_TEST(b.snapshot().acquisitions == 1u);
}

// The provider's counters as a scraper reads them (prometheus_text) after one acquire and release.
BOOST_FIXTURE_TEST_CASE(metrics_text_counts_one_acquire_and_release, io_fixture) {
  auto p = make_provider();
  run([&]() -> asio::awaitable<void> {
    auto held = co_await p.create_lock(unique("metrics")).async_acquire();
    co_await held.async_release();
  }());
  const auto text = ml::prometheus_text(p.snapshot());
  BOOST_TEST(text.find("\nmongolock_acquisitions_total 1\n") != std::string::npos, text);
  BOOST_TEST(text.find("\nmongolock_releases_total 1\n") != std::string::npos, text);
  BOOST_TEST(text.find("\nmongolock_acquire_wait_seconds_count 1\n") != std::string::npos, text);
  BOOST_TEST(text.find("\nmongolock_leases_held 0\n") != std::string::npos, text);
}

BOOST_FIXTURE_TEST_CASE(timeout_on_held_lock, io_fixture) {
  auto a = make_provider(), b = make_provider();
  const auto name = unique("timeout");
  run([&]() -> asio::awaitable<void> {
    auto held = co_await a.create_lock(name).async_acquire();
    const auto t0 = clock::now();
    auto [ec, none] = co_await b.create_lock(name).async_acquire_for(300ms, asio::as_tuple(asio::deferred));
    const auto took = ms_since(t0);
    BOOST_TEST((ec == ml::errc::timeout));
    BOOST_TEST(took >= 290);
    BOOST_TEST(took < 900);
    // The provider-wide option behaves the same.
    auto o = fast_options();
    o.acquire_timeout = 200ms;
    auto c = make_provider(o);
    std::tie(ec, none) = co_await c.create_lock(name).async_acquire(asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::timeout));
    BOOST_TEST(held.held());
  }());
  // Waiting on a held lock costs reads, one write to join the lock's line and one to leave it on
  // giving up: no take was attempted, and every call but those two, the one-time preparation and
  // declaration of the name (and a last read the timeout may cut short) found the lock held.
  const auto s = b.snapshot();
  BOOST_TEST(s.failed_attempts + s.acquisitions == 0u);
  BOOST_TEST(s.busy_observations > 3u);
  BOOST_TEST(s.server_calls <= 5u + s.busy_observations);
}

BOOST_FIXTURE_TEST_CASE(cancel_while_waiting_is_prompt_and_leaves_no_lock, io_fixture) {
  auto a = make_provider(), b = make_provider();
  const auto name = unique("cancel-wait");
  for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
    run([&]() -> asio::awaitable<void> {
      auto held = co_await a.create_lock(name).async_acquire();
      asio::cancellation_signal sig;
      asio::steady_timer t(co_await asio::this_coro::executor, 150ms);
      t.async_wait([&](error_code) { sig.emit(type); });
      const auto t0 = clock::now();
      auto [ec, none] = co_await b.create_lock(name).async_acquire(
          asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
      BOOST_TEST((ec == asio::error::operation_aborted));
      BOOST_TEST(ms_since(t0) < 400);
      co_await held.async_release();
      auto [ec2, again] = co_await a.create_lock(name).async_try_acquire(asio::as_tuple(asio::deferred));
      BOOST_TEST(!ec2);  // nobody else holds it
      co_await again.async_release();
    }());
  }
}

BOOST_FIXTURE_TEST_CASE(cancel_while_call_in_flight_never_leaks_the_lock, io_fixture) {
  auto a = make_provider(fast_options(20000ms)), b = make_provider();
  const auto name = unique("cancel-flight");
  int aborted = 0;
  for (int i = 0; i < 20; ++i) {
    run([&]() -> asio::awaitable<void> {
      asio::cancellation_signal sig;
      // Emitted right after the first server call has been handed to the worker pool.
      asio::post(co_await asio::this_coro::executor, [&] { sig.emit(asio::cancellation_type::terminal); });
      auto [ec, maybe] = co_await a.create_lock(name).async_acquire(
          asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
      if (ec == asio::error::operation_aborted) ++aborted;
      else if (maybe) co_await maybe.async_release();
    }());
    // If the server granted the lock to the abandoned call, the library gave it back: another
    // owner gets it at once instead of after the 20 s expiry.
    auto [ec, got] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lease>> {
      co_return co_await b.create_lock(name).async_acquire_for(2000ms, asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST_REQUIRE(!ec, "iteration " << i << ": " << ec.message());
    run([&, &got = got]() -> asio::awaitable<void> { co_await got.async_release(); }());
  }
  BOOST_TEST(aborted > 0);
}

BOOST_FIXTURE_TEST_CASE(awaitable_or_timer_cancels_the_acquire, io_fixture) {
  using namespace asio::experimental::awaitable_operators;
  auto a = make_provider(), b = make_provider();
  const auto name = unique("or-timer");
  run([&]() -> asio::awaitable<void> {
    auto held = co_await a.create_lock(name).async_acquire();
    asio::steady_timer t(co_await asio::this_coro::executor, 200ms);
    const auto t0 = clock::now();
    auto acquire = b.create_lock(name).async_acquire(asio::use_awaitable);
    auto timeout = t.async_wait(asio::use_awaitable);
    auto winner = co_await (std::move(acquire) || std::move(timeout));
    BOOST_TEST(winner.index() == 1u);
    BOOST_TEST(ms_since(t0) < 600);
  }());
}

BOOST_FIXTURE_TEST_CASE(many_coroutines_two_providers_never_overlap, io_fixture) {
  auto a = make_provider(), b = make_provider();
  const auto name = unique("exclusion");
  std::atomic<int> inside{0}, overlaps{0}, done{0};
  std::mutex mu;
  std::vector<std::int64_t> tokens;
  constexpr int coroutines = 24, rounds = 3;
  auto worker = [&](ml::provider& p) -> asio::awaitable<void> {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (int r = 0; r < rounds; ++r) {
      auto lease = co_await p.create_lock(name).async_acquire();
      if (inside.fetch_add(1) != 0) overlaps++;
      {
        std::lock_guard g(mu);
        tokens.push_back(lease.fencing_token());
      }
      t.expires_after(2ms);
      co_await t.async_wait(asio::deferred);
      inside.fetch_sub(1);
      co_await lease.async_release();
    }
    done++;
  };
  run([&]() -> asio::awaitable<void> {
    auto ex = co_await asio::this_coro::executor;
    for (int i = 0; i < coroutines; ++i) asio::co_spawn(ex, worker(i % 2 ? a : b), asio::detached);
    asio::steady_timer t(ex);
    while (done < coroutines) {
      t.expires_after(20ms);
      co_await t.async_wait(asio::deferred);
    }
  }(), 120000ms);
  BOOST_TEST(overlaps == 0);
  BOOST_REQUIRE(tokens.size() == std::size_t{coroutines * rounds});
  for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST(tokens[i] > tokens[i - 1]);
  BOOST_TEST_MESSAGE("failed CAS attempts: " << a.snapshot().failed_attempts + b.snapshot().failed_attempts
                     << ", busy reads: " << a.snapshot().busy_observations + b.snapshot().busy_observations);
}

// First use included, every uncontended cycle is two round trips: the blind take (an upsert that
// creates the document the first time) and the release (docs/design.md section 1). Tokens rise.
BOOST_FIXTURE_TEST_CASE(uncontended_cycles_cost_two_round_trips_from_the_first, io_fixture) {
  auto p = make_provider();
  const auto name = unique("seq");
  run([&]() -> asio::awaitable<void> {
    std::int64_t last = 0;
    for (int i = 0; i < 20; ++i) {
      auto lease = co_await p.create_lock(name).async_acquire();
      BOOST_TEST(lease.fencing_token() > last);
      last = lease.fencing_token();
      co_await lease.async_release();
    }
  }());
  auto s = p.snapshot();
  BOOST_TEST(s.acquisitions == 20u);
  BOOST_TEST(s.releases == 20u);
  BOOST_TEST(s.failed_attempts == 0u);
  BOOST_TEST(s.server_calls == 1u + 20u * 2u);  // the provider's server check, then two a cycle
}

// The case the library exists for: a lock released last by another process is taken without a
// read, whichever process comes next, and a renewal in between changes nothing.
BOOST_FIXTURE_TEST_CASE(a_lock_released_by_another_process_costs_two_round_trips, io_fixture) {
  auto a = make_provider(fast_options(300ms)), b = make_provider();
  const auto name = unique("other");
  run([&]() -> asio::awaitable<void> {
    auto l1 = co_await a.create_lock(name).async_acquire();
    asio::steady_timer t(co_await asio::this_coro::executor, 350ms);  // a few renewals (every 100 ms)
    co_await t.async_wait(asio::deferred);
    co_await l1.async_release();
    auto other = co_await b.create_lock(name).async_acquire();
    BOOST_TEST(other.fencing_token() > l1.fencing_token());
    co_await other.async_release();
    auto l3 = co_await a.create_lock(name).async_acquire();
    BOOST_TEST(l3.fencing_token() > other.fencing_token());
    co_await l3.async_release();
  }());
  BOOST_TEST(a.snapshot().renewals >= 2u);
  BOOST_TEST(a.snapshot().failed_attempts == 0u);
  BOOST_TEST(b.snapshot().server_calls == 1u + 2u, "b: its server check, the blind take, the release");
  const auto sa = a.snapshot();  // one lease at a time: a renewal is one command
  BOOST_TEST(sa.server_calls - sa.renewals == 1u + 2u + 2u, "a: no read either time");
}

BOOST_AUTO_TEST_SUITE_END()
