// A failure thrown as an exception carries its reason (with_reason.hpp): given use_awaitable or
// use_future, every operation of every class that takes a diagnostics throws
// system_error(code, reason); with_reason(token) does the same for any token, completing with
// (exception_ptr, T...).
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <string>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"
#include "mongolock/with_reason.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

ml::provider provider_on(engine& e) { return ml::detail::access::make_provider(e.p); }

// What a failure threw: its code and what(); {} and "" when nothing was thrown.
struct thrown_failure {
  error_code code;
  std::string what;
};

// Runs `body` (a coroutine on the engine's io_context) to completion and catches its system_error.
template <class Body>
thrown_failure thrown_by(engine& e, Body body) {
  auto caught = [](Body b) -> asio::awaitable<thrown_failure> {
    try {
      co_await b();
    } catch (const boost::system::system_error& x) {
      co_return thrown_failure{x.code(), x.what()};
    }
    co_return thrown_failure{};
  };
  auto f = asio::co_spawn(e.io, caught(std::move(body)), asio::use_future);
  BOOST_REQUIRE_MESSAGE(e.wait(f, 5s), "the operation did not complete in time");
  return f.get();
}

// The exception of a use_future future that is ready (or becomes so within 5 s).
template <class T>
thrown_failure thrown_from(engine& e, std::future<T>& f) {
  BOOST_REQUIRE_MESSAGE(e.wait(f, 5s), "the operation did not complete in time");
  try {
    f.get();
  } catch (const boost::system::system_error& x) {
    return {x.code(), x.what()};
  }
  return {};
}

bool mentions(const std::string& what, const std::string& reason) { return what.find(reason) != std::string::npos; }

void expect_thrown(const thrown_failure& got, ml::errc code, const std::string& reason) {
  BOOST_TEST((got.code == code), got.code.message());
  BOOST_TEST(mentions(got.what, reason), got.what);
}

// What a second release throws, after `acquire()` (an awaitable of a lease or a multi_lease).
template <class Acquire>
thrown_failure released_twice(engine& e, Acquire acquire) {
  return thrown_by(e, [&]() -> asio::awaitable<void> {
    auto op = acquire();
    auto held = co_await std::move(op);
    co_await held.async_release(asio::use_awaitable);
    co_await held.async_release(asio::use_awaitable);
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(reason_token_suite)

BOOST_AUTO_TEST_CASE(a_lock_throws_its_reason) {
  engine e;
  std::string why;
  ml::validate_lock_name("", &why);
  BOOST_REQUIRE(!why.empty());
  auto bad = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto nameless = e.lock("");  // named: GCC 12 may destroy temporaries of a co_await twice
    co_await nameless.async_acquire(asio::use_awaitable);
  });
  BOOST_TEST((bad.code == ml::errc::invalid_name), bad.code.message());
  BOOST_TEST(mentions(bad.what, why), bad.what);
  auto f = e.lock("").async_try_acquire(asio::use_future);
  auto future_bad = thrown_from(e, f);
  BOOST_TEST((future_bad.code == ml::errc::invalid_name));
  BOOST_TEST(mentions(future_bad.what, why), future_bad.what);
}

// A single lock's busy has no reason (error.hpp): the exception is Asio's plain one, whose what()
// is the code's message alone, not ": message".
BOOST_AUTO_TEST_CASE(a_busy_lock_throws_the_code_alone) {
  engine e;
  auto [ec, held] = e.acquire("x", 1s);
  BOOST_REQUIRE(!ec);
  auto busy = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto x = e.lock("x");
    co_await x.async_try_acquire(asio::use_awaitable);
  });
  BOOST_TEST((busy.code == ml::errc::busy));
  BOOST_TEST(busy.what == boost::system::system_error(make_error_code(ml::errc::busy)).what());
  BOOST_TEST(!e.release(held));
}

BOOST_AUTO_TEST_CASE(a_semaphore_rw_lock_and_multi_lock_throw_their_reasons) {
  engine e;
  auto p = provider_on(e);
  auto sem = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto none_at_all = p.create_semaphore("s", 0);
    co_await none_at_all.async_acquire(asio::use_awaitable);
  });
  BOOST_TEST((sem.code == ml::errc::invalid_options));
  BOOST_TEST(mentions(sem.what, "permits, not 0"), sem.what);
  auto reader = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto side = p.create_rw_lock("r", {.max_readers = 0}).reader();
    co_await side.async_acquire(asio::use_awaitable);
  });
  BOOST_TEST((reader.code == ml::errc::invalid_options));
  BOOST_TEST(mentions(reader.what, "rw_options::max_readers must be"), reader.what);
  auto writer = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto side = p.create_rw_lock("r", {.max_readers = 0}).writer();
    co_await side.async_try_acquire(asio::use_awaitable);
  });
  BOOST_TEST((writer.code == ml::errc::invalid_options));
  BOOST_TEST(mentions(writer.what, "rw_options::max_readers must be"), writer.what);
  auto none = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto empty_set = p.create_multi_lock({});
    co_await empty_set.async_acquire(asio::use_awaitable);
  });
  BOOST_TEST((none.code == ml::errc::invalid_options));
  BOOST_TEST(mentions(none.what, "a multi-lock needs at least one lock name"), none.what);
}

BOOST_AUTO_TEST_CASE(an_election_throws_its_reasons) {
  engine e;
  auto p = provider_on(e);
  auto empty_value = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto campaign = p.create_election("e").candidate("");
    co_await campaign.async_acquire(asio::use_awaitable);
  });
  BOOST_TEST((empty_value.code == ml::errc::invalid_options));
  BOOST_TEST(mentions(empty_value.what, "an election value must not be empty"), empty_value.what);
  std::string why;
  ml::validate_lock_name("", &why);
  auto bad_name = p.create_election("");
  auto f = bad_name.async_leader(asio::use_future);
  auto leader = thrown_from(e, f);
  BOOST_TEST((leader.code == ml::errc::invalid_name));
  BOOST_TEST(mentions(leader.what, why), leader.what);
  auto observed = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto watch = bad_name.observe(10ms);
    co_await watch.async_next(asio::use_awaitable);
  });
  BOOST_TEST((observed.code == ml::errc::invalid_name));
  BOOST_TEST(mentions(observed.what, why), observed.what);
}

BOOST_AUTO_TEST_CASE(provider_operations_throw_their_reasons) {
  engine e;
  auto p = provider_on(e);
  std::string why;
  ml::validate_lock_name("", &why);
  auto inspect = thrown_by(e, [&]() -> asio::awaitable<void> {
    std::string nameless;
    co_await p.async_inspect(std::move(nameless), asio::use_awaitable);
  });
  BOOST_TEST((inspect.code == ml::errc::invalid_name));
  BOOST_TEST(mentions(inspect.what, why), inspect.what);
  auto committed = p.async_inspect_committed("", asio::use_future);  // the overload without diagnostics&
  auto majority = thrown_from(e, committed);
  BOOST_TEST((majority.code == ml::errc::invalid_name));
  BOOST_TEST(mentions(majority.what, why), majority.what);
  auto force = thrown_by(e, [&]() -> asio::awaitable<void> {
    std::string nameless;
    co_await p.async_force_release(std::move(nameless), asio::use_awaitable);
  });
  BOOST_TEST((force.code == ml::errc::invalid_name));
  BOOST_TEST(mentions(force.what, why), force.what);
  e.store->inject(op::list, {fault::kind::unavailable});
  auto list = thrown_by(e, [&]() -> asio::awaitable<void> { co_await p.async_list(asio::use_awaitable); });
  BOOST_TEST((list.code == ml::errc::server_unavailable));
  BOOST_TEST(mentions(list.what, "no server selected"), list.what);
  e.store->inject(op::release_owners, {fault::kind::unavailable});
  auto all = p.async_release_all(asio::use_future);
  auto released = thrown_from(e, all);
  BOOST_TEST((released.code == ml::errc::server_unavailable));
  BOOST_TEST(mentions(released.what, "no server selected"), released.what);
}

BOOST_AUTO_TEST_CASE(an_acquire_after_shutdown_throws_why) {
  engine e;
  auto p = provider_on(e);
  auto down = thrown_by(e, [&]() -> asio::awaitable<void> {
    co_await p.async_shutdown(asio::use_awaitable);
    auto x = e.lock("x");
    co_await x.async_acquire(asio::use_awaitable);
  });
  BOOST_TEST((down.code == asio::error::operation_aborted), down.code.message());
  BOOST_TEST(mentions(down.what, "the provider is shutting down"), down.what);
}

BOOST_AUTO_TEST_CASE(lease_operations_throw_their_reasons) {
  engine e;
  auto x = e.lock("x");
  auto again = released_twice(e, [&] { return x.async_acquire(asio::use_awaitable); });
  expect_thrown(again, ml::errc::not_held, "the lease was already released");
  ml::lease empty;
  auto f = empty.async_record_completion(asio::use_future);
  expect_thrown(thrown_from(e, f), ml::errc::not_held, "this lease object holds no acquisition");
  auto after = thrown_by(e, [&]() -> asio::awaitable<void> {
    co_await empty.async_release_after(1ms, asio::use_awaitable);
  });
  expect_thrown(after, ml::errc::not_held, "this lease object holds no acquisition");
}

BOOST_AUTO_TEST_CASE(a_multi_lease_throws_its_reason) {
  engine e;
  auto both = provider_on(e).create_multi_lock({"a", "b"});
  auto again = released_twice(e, [&] { return both.async_acquire(asio::use_awaitable); });
  expect_thrown(again, ml::errc::not_held, "lock 'a': the lease was already released");
  ml::multi_lease empty;
  auto f = empty.async_release(asio::use_future);
  expect_thrown(thrown_from(e, f), ml::errc::not_held, "this multi_lease holds no acquisition");
}

// The fenced writes go through the same door (detail/initiation.hpp's async_op). A lease known
// to have ended sends nothing (detail/fenced_surface.hpp); an in-memory store has no client.
BOOST_AUTO_TEST_CASE(a_fenced_write_throws_its_reason) {
  engine e;
  auto x = e.lock("x");
  const ml::fenced_collection where{"db", "c"};  // named: GCC 12 and temporaries in co_await
  auto no_client = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto held = co_await x.async_acquire(asio::use_awaitable);
    co_await held.async_fenced_update(where, "{}", R"({"$set": {"v": 1}})", asio::use_awaitable);
  });
  expect_thrown(no_client, ml::errc::not_held, "the provider has no MongoDB client");
  auto released = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto held = co_await x.async_acquire(asio::use_awaitable);
    co_await held.async_release(asio::use_awaitable);
    co_await held.async_fenced_write(where, {}, asio::use_awaitable);
  });
  expect_thrown(released, ml::errc::released, "this lease was released");
  ml::lease empty;
  auto f = empty.async_fenced_update(where, "{}", "{}", asio::use_future);
  expect_thrown(thrown_from(e, f), ml::errc::not_held, "this lease object holds no acquisition");
  ml::multi_lease none;
  auto g = none.async_fenced_write(where, {}, asio::use_future);
  expect_thrown(thrown_from(e, g), ml::errc::not_held, "this multi_lease holds no acquisition");
}

// A lease known lost refuses a fenced write before sending it, a lease or a set of them (its
// document taken over, as multi_lock_test.cpp's guard case does).
BOOST_AUTO_TEST_CASE(a_lost_lease_refuses_a_fenced_write) {
  engine e(fast(600ms));
  auto [ec, l] = e.acquire("x", 1s);
  BOOST_REQUIRE(!ec);
  auto set = provider_on(e).create_multi_lock({"m1", "m2"}).async_acquire(asio::use_future);
  BOOST_REQUIRE(e.wait(set, 3s));
  auto held = set.get();
  auto lost = engine::ec_future([&, &l = l](auto h) { l.async_wait_lost(h); });
  auto set_lost = engine::ec_future([&](auto h) { held.async_wait_lost(h); });
  for (const char* name : {"x", "m2"}) {
    auto stolen = e.store->get(name);
    stolen.held.owner = "0123456789abcdef0123456789abcdef";
    stolen.held.token += 1;
    e.store->put(name, stolen);
  }
  BOOST_REQUIRE(e.wait(lost, 3s));
  BOOST_REQUIRE(e.wait(set_lost, 3s));
  const ml::fenced_collection where{"db", "c"};
  auto f = l.async_fenced_update(where, "{}", "{}", asio::use_future);
  expect_thrown(thrown_from(e, f), ml::errc::lease_lost, "this lease was lost");
  auto g = held.async_fenced_update(where, "{}", "{}", asio::use_future);
  expect_thrown(thrown_from(e, g), ml::errc::lease_lost, "this lease was lost");
}

BOOST_AUTO_TEST_CASE(a_leadership_throws_its_reasons) {
  engine e;
  auto p = provider_on(e);
  auto again = thrown_by(e, [&]() -> asio::awaitable<void> {
    auto campaign = p.create_election("e").candidate("here");
    auto leading = co_await campaign.async_acquire(asio::use_awaitable);
    co_await leading.async_resign(asio::use_awaitable);
    co_await leading.async_resign(asio::use_awaitable);
  });
  BOOST_TEST((again.code == ml::errc::not_held));
  BOOST_TEST(mentions(again.what, "the lease was already released"), again.what);
  ml::leadership none;
  auto f = none.async_proclaim("there", asio::use_future);
  auto proclaim = thrown_from(e, f);
  BOOST_TEST((proclaim.code == ml::errc::not_held));
  BOOST_TEST(mentions(proclaim.what, "this leadership holds no lease"), proclaim.what);
}

// The adapter itself, with a callback: (exception_ptr, T) in place of (error_code, T), the
// reason in the exception and in the caller's diagnostics alike, null on success.
BOOST_AUTO_TEST_CASE(with_reason_hands_a_callback_the_exception) {
  engine e;
  std::string why;
  ml::validate_lock_name("", &why);
  std::promise<std::exception_ptr> failed;
  auto f = failed.get_future();
  e.lock("").async_acquire(ml::with_reason([&](std::exception_ptr ep, ml::lease) { failed.set_value(ep); }));
  BOOST_REQUIRE(e.wait(f, 5s));
  auto ep = f.get();
  BOOST_REQUIRE(ep);
  try {
    std::rethrow_exception(ep);
  } catch (const boost::system::system_error& x) {
    BOOST_TEST((x.code() == ml::errc::invalid_name));
    BOOST_TEST(mentions(x.what(), why), x.what());
  }
  ml::diagnostics d;
  std::promise<std::string> given;
  auto g = given.get_future();
  e.lock("").async_acquire(d, ml::with_reason([&](std::exception_ptr ep2, ml::lease) {
    try {
      if (ep2) std::rethrow_exception(ep2);
      given.set_value("no exception");
    } catch (const boost::system::system_error& x) {
      given.set_value(x.what());
    }
  }));
  BOOST_REQUIRE(e.wait(g, 5s));
  BOOST_TEST(d.reason == why);
  BOOST_TEST(mentions(g.get(), why));
  std::promise<std::tuple<bool, bool>> ok;  // (no exception, a lease)
  auto h = ok.get_future();
  e.lock("x").async_acquire(ml::with_reason([&](std::exception_ptr ep3, ml::lease held) {
    ok.set_value({!ep3, held.held()});
    held.async_release(asio::detached);
  }));
  BOOST_REQUIRE(e.wait(h, 5s));
  BOOST_TEST((h.get() == std::tuple{true, true}));
}

// The adapted handler keeps the caller's associated executor, and with_reason(deferred) makes a
// deferred operation of the adapted signature that runs once invoked.
BOOST_AUTO_TEST_CASE(with_reason_keeps_the_handlers_executor_and_composes_with_deferred) {
  engine e;
  auto strand = asio::make_strand(e.io);
  std::promise<bool> on_strand;
  auto f = on_strand.get_future();
  auto where = [&](std::exception_ptr, ml::lease) { on_strand.set_value(strand.running_in_this_thread()); };
  e.lock("").async_acquire(ml::with_reason(asio::bind_executor(strand, where)));
  BOOST_REQUIRE(e.wait(f, 5s));
  BOOST_TEST(f.get());
  auto later = e.lock("").async_acquire(ml::with_reason(asio::deferred));
  std::promise<bool> threw;
  auto g = threw.get_future();
  std::move(later)([&](std::exception_ptr ep, ml::lease) { threw.set_value(static_cast<bool>(ep)); });
  BOOST_REQUIRE(e.wait(g, 5s));
  BOOST_TEST(g.get());
}

BOOST_AUTO_TEST_SUITE_END()
