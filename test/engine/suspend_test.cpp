// System suspend. steady_clock stops while the machine sleeps, so a holder
// resumed after its lease expired (in real time) kept working while another machine had taken
// the lock over. The engine's deadlines now count on CLOCK_BOOTTIME; boot_clock's test hook moves
// that clock ahead while steady_clock and every Asio timer see no time pass, as in a real suspend.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "model/clocks.hpp"
#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...
using ml::detail::boot_clock;

BOOST_AUTO_TEST_SUITE(suspend_suite)

// Suspended for 5 s holding a 1 s lease: on resume the lease is lost (guarded work cancelled,
// async_wait_lost completes) within the watchdog's one-second wait cap, and no renewal is sent
// after the resume to pretend otherwise.
BOOST_AUTO_TEST_CASE(resume_past_the_deadline_loses_the_lease) {
  engine e(fast(1000ms));
  auto [ec, held] = e.acquire("sleeper", 1s);
  BOOST_REQUIRE(!ec);
  auto ended = engine::ec_future([&, &held = held](auto h) { held.async_wait_lost(h); });
  e.run_for(100ms);
  const auto renewals = e.store->count(op::renew);
  boot_clock::simulate_suspend(5s);
  const auto resumed = steady::now();
  BOOST_REQUIRE_MESSAGE(e.wait(ended, 3s), "the lease outlived a suspend longer than its expiry");
  BOOST_TEST((ended.get() == ml::errc::lease_lost));
  BOOST_TEST((steady::now() - resumed < 1500ms), "noticed within the one-second wait cap");
  BOOST_TEST(e.store->count(op::renew) <= renewals + 1, "at most the renewal already in flight");
}

// A holder frozen past its deadline whose work's own timer runs first on resume, before the
// watchdog: the work completes, but after the lease's local deadline (boot clock), so the guard
// completes with lease_lost, not with the work's result (docs/design.md section 6). The time
// jumps in the work's last handler: its completion comes before the watchdog, due from then on,
// can run (the order a resume from SIGSTOP gave in one run of nine).
BOOST_AUTO_TEST_CASE(work_that_finishes_past_the_deadline_is_lease_lost) {
  engine e(fast(3000ms));
  auto [ec, held] = e.acquire("frozen", 1s);
  BOOST_REQUIRE(!ec);
  auto work = [](asio::any_io_executor ex) -> asio::awaitable<int> {
    asio::steady_timer t(ex, 100ms);
    co_await t.async_wait(asio::use_awaitable);
    boot_clock::simulate_suspend(5s);
    co_return 7;
  };
  std::future<int> guarded = held.async_guard(work(e.io.get_executor()), asio::use_future);
  BOOST_REQUIRE(e.wait(guarded, 3s));
  const auto got = error_of(guarded);
  BOOST_TEST((got == ml::errc::lease_lost), "got '" << got.message() << "'");
}

// Suspended while a take is in flight: its reply comes back 200 ms later by steady_clock but
// 5 s later in real time, past sent + expiry - margin. It is a late grant: given back.
BOOST_AUTO_TEST_CASE(suspend_while_the_take_is_in_flight_makes_it_a_late_grant) {
  engine e(fast(1000ms));
  e.store->inject(op::take, fault(fault::kind::hang, 200ms));
  auto done = std::make_shared<std::promise<error_code>>();
  auto tried = done->get_future();
  e.lock("napper").async_try_acquire([done](error_code ec, ml::lease) { done->set_value(ec); });
  // Suspended once the take is out (not after a fixed time, which a slow machine may spend before
  // sending it); its reply cannot come meanwhile: nothing runs the context until e.wait below.
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::take) == 1; }, 2s));
  boot_clock::simulate_suspend(5s);
  BOOST_REQUIRE(e.wait(tried, 3s));
  BOOST_TEST(!!tried.get(), "a reply that came after the lease's own deadline is not a grant");
  e.run_for(300ms);
  BOOST_TEST(e.store->get("napper").held.owner.empty(), "given back");
}

// The clock itself: monotonic, and ahead of steady_clock by the simulated suspend.
// Each bound reads the clocks nested so that it holds exactly: steady_clock inside boot_clock for
// the lower one, boot_clock inside steady_clock for the upper one; a stall between two reads
// moves each difference away from its bound.
BOOST_AUTO_TEST_CASE(boot_clock_counts_the_suspend) {
  {
    const auto b0 = boot_clock::now();
    const auto s0 = steady::now();
    boot_clock::simulate_suspend(2s);
    const auto s1 = steady::now();
    const auto b1 = boot_clock::now();
    BOOST_TEST(((b1 - b0) - (s1 - s0) >= 2s));
  }
  {
    const auto s0 = steady::now();
    const auto b0 = boot_clock::now();
    boot_clock::simulate_suspend(2s);
    const auto b1 = boot_clock::now();
    const auto s1 = steady::now();
    BOOST_TEST(((b1 - b0) - (s1 - s0) < 2s + 100ms));
  }
}

BOOST_AUTO_TEST_SUITE_END()
