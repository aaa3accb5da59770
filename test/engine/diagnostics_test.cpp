// The reason for a failure, to the caller: mongolock::diagnostics gets the
// server's or the driver's message, or the check that failed, before the handler runs.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

void give_back(ml::lease& l) {
  if (l) l.async_release(asio::detached);
}
template <class T>
void give_back(T&) {}

// Runs `start(diagnostics&, handler)` to completion (any operation: the handler takes the error
// and whatever else the operation completes with); returns the error and the reason.
template <class Start>
std::pair<error_code, std::string> with_reason(engine& e, Start start, std::string stale = {}) {
  auto d = std::make_shared<ml::diagnostics>();
  d->reason = std::move(stale);
  auto done = std::make_shared<std::promise<error_code>>();
  auto f = done->get_future();
  start(*d, [done, d](error_code ec, auto... rest) {
    (give_back(rest), ...);
    done->set_value(ec);
  });
  BOOST_REQUIRE(e.wait(f, 5s));
  return {f.get(), d->reason};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(diagnostics_suite)

BOOST_AUTO_TEST_CASE(a_server_failure_comes_with_the_servers_words) {
  engine e;
  e.store->inject(op::take, {fault::kind::unavailable});  // a try's one look: a wait would ride it out
  auto [ec, reason] = with_reason(e, [&](ml::diagnostics& d, auto h) { e.lock("x").async_try_acquire(d, h); });
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

BOOST_AUTO_TEST_CASE(a_failed_release_says_what_becomes_of_the_lock) {
  engine e;
  auto [ec, held] = e.acquire("x", 1s);
  BOOST_REQUIRE(!ec);
  e.store->inject(op::release, {fault::kind::unavailable});
  auto [failed, why] = with_reason(e, [&, &held = held](ml::diagnostics& d, auto h) { held.async_release(d, h); });
  BOOST_TEST((failed == ml::errc::server_unavailable));
  BOOST_TEST(why == "no server selected; the lock expires on its own");
  auto [again, already] = with_reason(e, [&, &held = held](ml::diagnostics& d, auto h) { held.async_release(d, h); });
  BOOST_TEST((again == ml::errc::not_held));
  BOOST_TEST(already == "the lease was already released");
  ml::lease empty;
  auto [none, nothing] = with_reason(e, [&](ml::diagnostics& d, auto h) { empty.async_release(d, h); });
  BOOST_TEST((none == ml::errc::not_held));
  BOOST_TEST(nothing == "this lease object holds no acquisition");
}

BOOST_AUTO_TEST_CASE(an_unconfirmed_release_says_it_is_retried) {
  engine e;
  auto [ec, held] = e.acquire("x", 1s);
  BOOST_REQUIRE(!ec);
  e.store->inject(op::release, {fault::kind::write_concern_error});
  auto [failed, why] = with_reason(e, [&, &held = held](ml::diagnostics& d, auto h) { held.async_release(d, h); });
  BOOST_TEST((failed == ml::errc::ambiguous_result));
  BOOST_TEST(why == "writeConcernError: waiting for replication timed out; the release is retried in the background");
}

BOOST_AUTO_TEST_CASE(provider_operations_give_their_reasons) {
  engine e;
  auto locks = ml::detail::access::make_provider(e.p);
  e.store->inject(op::read, {fault::kind::unavailable});
  auto [inspect_ec, inspect_why] = with_reason(e, [&](ml::diagnostics& d, auto h) { locks.async_inspect("x", d, h); });
  BOOST_TEST((inspect_ec == ml::errc::server_unavailable));
  BOOST_TEST(inspect_why == "no server selected");
  auto [bad_ec, bad_why] = with_reason(e, [&](ml::diagnostics& d, auto h) { locks.async_inspect("", d, h); });
  BOOST_TEST((bad_ec == ml::errc::invalid_name));
  BOOST_TEST(!bad_why.empty());
  e.store->inject(op::list, {fault::kind::unavailable});
  auto [list_ec, list_why] = with_reason(e, [&](ml::diagnostics& d, auto h) { locks.async_list(d, h); });
  BOOST_TEST((list_ec == ml::errc::server_unavailable));
  BOOST_TEST(list_why == "no server selected");
  e.store->inject(op::force_release, {fault::kind::unavailable});
  auto [force_ec, force_why] = with_reason(
      e, [&](ml::diagnostics& d, auto h) { locks.async_force_release("x", ml::force_mode::immediate, d, h); });
  BOOST_TEST((force_ec == ml::errc::server_unavailable));
  BOOST_TEST(force_why == "no server selected");
  e.store->inject(op::release_owners, {fault::kind::unavailable});
  auto [all_ec, all_why] = with_reason(e, [&](ml::diagnostics& d, auto h) { locks.async_release_all(d, h); });
  BOOST_TEST((all_ec == ml::errc::server_unavailable));
  BOOST_TEST(all_why == "no server selected");
  auto [ok, cleared] = with_reason(e, [&](ml::diagnostics& d, auto h) { locks.async_list(d, h); }, "stale");
  BOOST_TEST(!ok);
  BOOST_TEST(cleared.empty());
}

BOOST_AUTO_TEST_CASE(a_scoped_run_that_cannot_acquire_says_why) {
  engine e;
  e.store->inject(op::take, {fault::kind::refused});
  ml::diagnostics d;
  std::promise<std::exception_ptr> done;
  auto f = done.get_future();
  auto work = []() -> asio::awaitable<void> { co_return; };
  e.lock("x").async_run(work(), d, [&](std::exception_ptr ep) { done.set_value(ep); });
  BOOST_REQUIRE(e.wait(f, 5s));
  auto ep = f.get();
  BOOST_REQUIRE(ep);
  try {
    std::rethrow_exception(ep);
  } catch (const boost::system::system_error& ex) {
    BOOST_TEST((ex.code() == ml::errc::server_error));
  }
  BOOST_TEST(d.reason == "command refused by the server");
}

BOOST_AUTO_TEST_SUITE_END()
