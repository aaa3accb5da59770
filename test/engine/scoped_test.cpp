// lock::async_run: acquire, guarded work, release awaited, result returned.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <stdexcept>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

struct outcome_of_run {
  std::exception_ptr failure;
  int value = 0;
};

// Runs lock(name).async_run(work) with a callback, as a future.
std::future<outcome_of_run> run(engine& e, const std::string& name, asio::awaitable<int> work,
                                asio::cancellation_slot slot = {}) {
  auto done = std::make_shared<std::promise<outcome_of_run>>();
  e.lock(name).async_run(std::move(work), asio::bind_cancellation_slot(slot, [done](std::exception_ptr x, int v) {
                           done->set_value({x, v});
                         }));
  return done->get_future();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(scoped_suite)

BOOST_AUTO_TEST_CASE(returns_the_work_result_after_the_release) {
  engine e;
  std::string owner_during_work;
  auto work = [&]() -> asio::awaitable<int> {
    owner_during_work = e.store->get("r").held.owner;
    co_return 42;
  };
  auto f = run(e, "r", work());
  BOOST_REQUIRE(e.wait(f, 5s));
  auto out = f.get();
  BOOST_TEST(!out.failure);
  BOOST_TEST(out.value == 42);
  BOOST_TEST(!owner_during_work.empty(), "the work ran under the lock");
  BOOST_TEST(e.store->get("r").held.owner.empty(), "released before completing, not in the background");
}

BOOST_AUTO_TEST_CASE(work_that_throws_still_releases) {
  engine e;
  auto work = []() -> asio::awaitable<int> {
    throw std::runtime_error("report failed");
    co_return 0;
  };
  auto f = run(e, "t", work());
  BOOST_REQUIRE(e.wait(f, 5s));
  auto out = f.get();
  BOOST_REQUIRE(out.failure);
  BOOST_CHECK_THROW(std::rethrow_exception(out.failure), std::runtime_error);
  BOOST_TEST(e.store->get("t").held.owner.empty());
}

BOOST_AUTO_TEST_CASE(cancelling_during_the_work_cancels_it_and_still_releases) {
  engine e;
  asio::cancellation_signal stop;
  bool started = false;
  auto work = [&]() -> asio::awaitable<int> {
    started = true;
    asio::steady_timer t(co_await asio::this_coro::executor, 10s);
    co_await t.async_wait(asio::use_awaitable);
    co_return 1;
  };
  auto f = run(e, "c", work(), stop.slot());
  e.run_for(100ms);
  BOOST_REQUIRE(started);
  stop.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(f, 2s));
  auto out = f.get();
  BOOST_REQUIRE(out.failure);
  BOOST_CHECK_THROW(std::rethrow_exception(out.failure), boost::system::system_error);
  BOOST_TEST(e.store->get("c").held.owner.empty());
}

BOOST_AUTO_TEST_CASE(void_work_and_coroutine_use) {
  engine e;
  bool ran = false, done = false;
  auto body = [&]() -> asio::awaitable<void> {
    auto work = [&]() -> asio::awaitable<void> {
      ran = true;
      co_return;
    };
    co_await e.lock("v").async_run(work());
    done = true;
  };
  asio::co_spawn(e.io, body(), [](std::exception_ptr x) {
    if (x) std::rethrow_exception(x);
  });
  e.run_for(300ms);
  BOOST_TEST(ran);
  BOOST_TEST(done);
  BOOST_TEST(e.store->get("v").held.owner.empty());
}

BOOST_AUTO_TEST_CASE(work_made_from_the_lease_gets_its_token_and_runs_before_the_release) {
  engine e;
  std::int64_t token_given = 0, token_held = 0;
  std::string owner_during_work;
  bool done = false;
  auto body = [&]() -> asio::awaitable<void> {
    const auto pages = co_await e.lock("w").async_run([&](const ml::lease& l) -> asio::awaitable<int> {
      token_given = l.fencing_token();
      token_held = e.store->get("w").held.token;
      owner_during_work = e.store->get("w").held.owner;
      co_return 7;
    });
    BOOST_TEST(pages == 7);
    done = true;
  };
  asio::co_spawn(e.io, body(), [](std::exception_ptr x) {
    if (x) std::rethrow_exception(x);
  });
  e.run_for(300ms);
  BOOST_TEST(done);
  BOOST_TEST(token_given != 0);
  BOOST_TEST(token_given == token_held, "the work got the token the document holds");
  BOOST_TEST(!owner_during_work.empty());
  BOOST_TEST(e.store->get("w").held.owner.empty(), "released before completing");
}

BOOST_AUTO_TEST_CASE(work_made_from_the_lease_with_diagnostics_and_a_callback) {
  engine e;
  ml::diagnostics why;
  std::promise<std::int64_t> got;
  auto f = got.get_future();
  e.lock("d").async_run([](const ml::lease& l) -> asio::awaitable<std::int64_t> { co_return l.fencing_token(); }, why,
                        [&](std::exception_ptr x, std::int64_t token) {
                          if (x) got.set_exception(x);
                          else got.set_value(token);
                        });
  BOOST_REQUIRE(e.wait(f, 5s));
  BOOST_TEST(f.get() != 0);
  BOOST_TEST(why.reason.empty());
}

BOOST_AUTO_TEST_SUITE_END()
