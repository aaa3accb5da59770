// Every asynchronous operation with every common completion token. Mostly a
// compile test: the operations are instantiated inside coroutines and functions that the cases
// build but only partly run; what runs, runs on the in-memory store.
#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

// co_await with deferred, use_awaitable and as_tuple of each; the body is never run.
[[maybe_unused]] asio::awaitable<void> awaited(ml::lock l, ml::lease held, ml::provider& p, ml::client& c) {
  auto work = []() -> asio::awaitable<int> { co_return 1; };
  auto nothing = []() -> asio::awaitable<void> { co_return; };
  [[maybe_unused]] ml::lease a1 = co_await l.async_acquire();
  [[maybe_unused]] ml::lease a2 = co_await l.async_acquire(asio::use_awaitable);
  [[maybe_unused]] auto [e3, a3] = co_await l.async_acquire(asio::as_tuple(asio::deferred));
  [[maybe_unused]] auto [e4, a4] = co_await l.async_acquire(asio::as_tuple(asio::use_awaitable));
  [[maybe_unused]] ml::lease b1 = co_await l.async_acquire_for(1s);
  [[maybe_unused]] auto [e5, b2] = co_await l.async_try_acquire(asio::as_tuple(asio::deferred));
  ml::diagnostics why;  // the reason-carrying overloads, with the default and other tokens
  [[maybe_unused]] ml::lease d1 = co_await l.async_acquire(why);
  [[maybe_unused]] auto [e10, d2] = co_await l.async_acquire_for(1s, why, asio::as_tuple(asio::use_awaitable));
  [[maybe_unused]] auto [e11, d3] = co_await l.async_try_acquire({.within = 1s}, why, asio::as_tuple(asio::deferred));
  co_await held.async_release();
  co_await held.async_release(asio::use_awaitable);
  [[maybe_unused]] auto [e6] = co_await held.async_release(asio::as_tuple(asio::deferred));
  [[maybe_unused]] auto [e7] = co_await held.async_wait_lost(asio::as_tuple(asio::use_awaitable));
  [[maybe_unused]] int n1 = co_await held.async_guard(work());
  [[maybe_unused]] int n2 = co_await held.async_guard(work(), asio::use_awaitable);
  [[maybe_unused]] auto [x3, n3] = co_await held.async_guard(work(), asio::as_tuple(asio::use_awaitable));
  co_await held.async_guard(nothing());
  // asio::deferred, as for every other operation (Asio 1.81 cannot co_await a
  // deferred (exception_ptr, T) operation, so these hand back the awaitable).
  [[maybe_unused]] int n4 = co_await held.async_guard(work(), asio::deferred);
  co_await held.async_guard(nothing(), asio::deferred);
  [[maybe_unused]] int r1 = co_await l.async_run(work());
  [[maybe_unused]] auto [x4, r2] = co_await l.async_run(work(), asio::as_tuple(asio::use_awaitable));
  co_await l.async_run(nothing());
  [[maybe_unused]] int r3 = co_await l.async_run(work(), asio::deferred);
  [[maybe_unused]] std::size_t k = co_await p.async_release_all();
  [[maybe_unused]] auto [e8, info] = co_await p.async_inspect("x", asio::as_tuple(asio::deferred));
  [[maybe_unused]] auto all = co_await p.async_list(asio::use_awaitable);
  [[maybe_unused]] auto [e9, owner] = co_await p.async_force_release("x", asio::as_tuple(asio::use_awaitable));
  co_await p.async_shutdown();
  [[maybe_unused]] auto version = co_await c.async_server_version();
  const ml::fenced_collection where{"db", "c"};  // named: GCC 12 and temporaries in co_await
  [[maybe_unused]] ml::fenced_result f1 = co_await held.async_fenced_update(where, "{}", R"({"$set": {"v": 1}})");
  [[maybe_unused]] auto [fe, f2] = co_await ml::async_fenced_update(c, 1, where, "{}", "{}",
                                                                     asio::as_tuple(asio::use_awaitable));
}

// Callbacks and futures; never called.
[[maybe_unused]] void callbacks(ml::lock l, ml::lease held, ml::provider& p, ml::client& c) {
  l.async_acquire([](error_code, ml::lease) {});
  l.async_try_acquire([](error_code, ml::lease) {});
  held.async_release([](error_code) {});
  held.async_wait_lost([](error_code) {});
  auto work = []() -> asio::awaitable<int> { co_return 1; };
  held.async_guard(work(), [](std::exception_ptr, int) {});
  l.async_run(work(), [](std::exception_ptr, int) {});
  [[maybe_unused]] std::future<int> f5 = l.async_run(work(), asio::use_future);
  p.async_release_all([](error_code, std::size_t) {});
  p.async_shutdown([](error_code) {});
  c.async_server_version([](error_code, ml::server_version) {});
  [[maybe_unused]] std::future<ml::lease> f1 = l.async_acquire(asio::use_future);
  [[maybe_unused]] std::future<void> f2 = held.async_release(asio::use_future);
  [[maybe_unused]] std::future<std::vector<ml::lock_info>> f3 = p.async_list(asio::use_future);
  [[maybe_unused]] std::future<int> f4 = held.async_guard(work(), asio::use_future);
  const ml::fenced_collection where{"db", "c"};
  held.async_fenced_write(where, {}, [](error_code, ml::fenced_result) {});
  ml::async_fenced_write(c, 1, where, {}, [](error_code, ml::fenced_result) {});
  [[maybe_unused]] std::future<ml::fenced_result> f6 = held.async_fenced_update(where, "{}", "{}", asio::use_future);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tokens_suite)

// The forms that run: each token completes an acquire and a release on the memory store.
BOOST_AUTO_TEST_CASE(acquire_and_release_complete_with_each_token) {
  engine e;
  std::future<ml::lease> fut = e.lock("f").async_acquire_for(1s, asio::use_future);
  BOOST_REQUIRE(e.wait(fut, 5s));
  ml::lease held = fut.get();
  BOOST_TEST(held.held());
  std::future<void> released = held.async_release(asio::use_future);
  BOOST_REQUIRE(e.wait(released, 5s));
  BOOST_CHECK_NO_THROW(released.get());

  bool done = false;
  auto op = e.lock("d").async_acquire_for(1s, asio::deferred);  // deferred: starts when invoked
  e.run_for(50ms);
  BOOST_TEST(e.store->count(test::op::take) == 1u, "a deferred operation has not started");
  std::move(op)([&](error_code ec, ml::lease l) {
    done = !ec && l.held();
    l.async_release(asio::detached);
  });
  e.run_for(200ms);
  BOOST_TEST(done);
}

// async_guard and async_run with asio::deferred run, and return the work's result.
BOOST_AUTO_TEST_CASE(guard_and_run_with_deferred_complete) {
  engine e;
  auto body = [&]() -> asio::awaitable<int> {
    auto held = co_await e.lock("g").async_acquire_for(1s, asio::use_awaitable);
    auto work = []() -> asio::awaitable<int> { co_return 20; };
    const int guarded = co_await held.async_guard(work(), asio::deferred);
    co_await held.async_release(asio::use_awaitable);
    const int scoped = co_await e.lock("g").async_run(work(), asio::deferred);
    co_return guarded + scoped;
  };
  auto f = asio::co_spawn(e.io, body(), asio::use_future);
  BOOST_REQUIRE(e.wait(f, 5s));
  BOOST_TEST(f.get() == 40);
}

BOOST_AUTO_TEST_SUITE_END()
