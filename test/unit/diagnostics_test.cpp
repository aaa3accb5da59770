// The reason for a failure, to the caller (issue 9, item 1): mongolock::diagnostics gets the
// server's or the driver's message, or the check that failed, before the handler runs.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

// Runs `start(diagnostics&, handler)` to completion; returns the error and the reason.
template <class Start>
std::pair<error_code, std::string> with_reason(engine& e, Start start, std::string stale = {}) {
  auto d = std::make_shared<ml::diagnostics>();
  d->reason = std::move(stale);
  auto done = std::make_shared<std::promise<error_code>>();
  auto f = done->get_future();
  start(*d, [done, d](error_code ec, ml::lease l) {
    if (l) l.async_release(asio::detached);
    done->set_value(ec);
  });
  BOOST_REQUIRE(e.wait(f, 5s));
  return {f.get(), d->reason};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(diagnostics_suite)

BOOST_AUTO_TEST_CASE(a_server_failure_comes_with_the_servers_words) {
  engine e;
  e.store->inject(op::read, {fault::kind::unavailable});
  auto [ec, reason] = with_reason(e, [&](ml::diagnostics& d, auto h) { e.lock("x").async_acquire(d, h); });
  BOOST_TEST((ec == ml::errc::server_unavailable), ec.message());
  BOOST_TEST(reason == "no server selected");  // the memory store's driver-like message
}

BOOST_AUTO_TEST_CASE(a_refused_input_says_which_check_failed) {
  engine e;
  auto [ec, reason] = with_reason(e, [&](ml::diagnostics& d, auto h) { e.lock("x").async_acquire_for(-1ms, d, h); });
  BOOST_TEST((ec == ml::errc::invalid_options));
  BOOST_TEST(reason == "the acquire timeout is negative");
  auto [name_ec, why] = with_reason(e, [&](ml::diagnostics& d, auto h) { e.lock("").async_acquire(d, h); });
  BOOST_TEST((name_ec == ml::errc::invalid_name));
  BOOST_TEST(!why.empty());
}

BOOST_AUTO_TEST_CASE(success_and_busy_leave_no_reason) {
  engine e;
  auto [ok, cleared] = with_reason(e, [&](ml::diagnostics& d, auto h) { e.lock("x").async_acquire(d, h); }, "stale");
  BOOST_TEST(!ok);
  BOOST_TEST(cleared.empty(), "a reason from an earlier failure must not survive a success");
  auto [held_ec, held] = e.acquire("y", 1s);
  BOOST_REQUIRE(!held_ec);
  auto [busy, none] = with_reason(e, [&](ml::diagnostics& d, auto h) { e.lock("y").async_try_acquire({}, d, h); });
  BOOST_TEST((busy == ml::errc::busy));
  BOOST_TEST(none.empty());
  e.release(held);
}

BOOST_AUTO_TEST_SUITE_END()
