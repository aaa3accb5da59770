// The lease's renewal and watchdog decisions without a server, a clock or a timer.
#include <boost/test/unit_test.hpp>

#include "printable.hpp"
#include "sansio/lease_fsm.hpp"
#include "mongolock/error.hpp"

namespace ml = mongolock;
using namespace std::chrono_literals;
using kind = ml::detail::lease_action::kind;
using ml::detail::lease_input;
using tp = ml::detail::boot_clock::time_point;

namespace {

const tp t0{};  // the acquiring take was sent at t0; expiry 3 s, margin 300 ms, renew every 1 s
ml::detail::lease_fsm fresh() { return {t0, 3000ms, 300ms, 1000ms, 42}; }

ml::detail::outcome<bool> ok() {
  ml::detail::outcome<bool> r;
  r.value = true;
  return r;
}
ml::detail::outcome<bool> matched_nothing() { return {}; }
ml::detail::outcome<bool> failed() {
  ml::detail::outcome<bool> r;
  r.ec = ml::make_error_code(ml::errc::server_unavailable);
  r.ambiguous = true;
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lease_fsm_suite)

BOOST_AUTO_TEST_CASE(renews_every_interval_and_moves_the_deadline_to_the_send_time) {
  auto f = fresh();
  auto a = f.resume(lease_input::start(t0 + 5ms));
  BOOST_TEST(a.what == kind::wait_until);
  BOOST_TEST((a.at == t0 + 1000ms), "the first: R after the take's send");
  BOOST_TEST(f.resume(lease_input::timer(a.at)).what == kind::renew);
  BOOST_TEST((f.deadline() == t0 + 2700ms));
  // A slow reply: the deadline counts from sending.
  a = f.resume(lease_input::renewed(ok(), t0 + 1005ms, t0 + 1400ms));
  BOOST_TEST(a.what == kind::wait_until);
  BOOST_TEST((a.at == t0 + 2400ms));
  BOOST_TEST((f.deadline() == t0 + 1005ms + 2700ms));
  BOOST_TEST(f.beats() == 1);
}

// A suspend (or a stall) carried the renewal timer past the deadline: no renewal is sent.
BOOST_AUTO_TEST_CASE(timer_waking_past_the_deadline_is_lost_without_renewing) {
  auto f = fresh();
  BOOST_TEST(f.resume(lease_input::timer(t0 + 2700ms)).what == kind::lost);
  BOOST_TEST(f.resume(lease_input::timer(t0 + 2699ms)).what == kind::renew);
}

// The reply came back after the deadline: it extends the lease only if it was sent in time and
// its own deadline is still ahead; otherwise the lease is lost, success or not.
BOOST_AUTO_TEST_CASE(success_arriving_after_the_deadline_revives_nothing) {
  auto f = fresh();
  // Sent at 1 s, answered 5 s later (the machine slept meanwhile): 1 s + 2.7 s is past.
  BOOST_TEST(f.resume(lease_input::renewed(ok(), t0 + 1s, t0 + 6s)).what == kind::lost);
  auto g = fresh();
  // Sent at 2.6 s, answered at 2.8 s: past the old deadline, but the new one (5.3 s) is ahead.
  BOOST_TEST(g.resume(lease_input::renewed(ok(), t0 + 2600ms, t0 + 2800ms)).what == kind::wait_until);
}

// Batched renewal (docs/design.md section 5) sends a lease's renewal when the provider's batch goes
// out, not on the lease's own timer: a renewal that left at or after the deadline must not move it,
// whatever the server answers (the holder has already been told to stop).
BOOST_AUTO_TEST_CASE(a_renewal_sent_after_the_deadline_revives_nothing) {
  auto f = fresh();
  BOOST_TEST(f.resume(lease_input::renewed(ok(), t0 + 2700ms, t0 + 2750ms)).what == kind::lost);
  BOOST_TEST((f.deadline() == t0 + 2700ms));
  BOOST_TEST(f.beats() == 0);
}

BOOST_AUTO_TEST_CASE(renewal_matching_nothing_means_taken) {
  auto f = fresh();
  BOOST_TEST(f.resume(lease_input::renewed(matched_nothing(), t0 + 1s, t0 + 1100ms)).what == kind::taken);
  BOOST_TEST(f.beats() == 0);
}

// A failed renewal is retried after every/8 .. every/4, jittered, and the deadline stays put.
BOOST_AUTO_TEST_CASE(failed_renewal_retries_sooner_and_keeps_the_deadline) {
  auto f = fresh();
  for (int i = 0; i < 20; ++i) {
    const auto now = t0 + 1000ms + std::chrono::milliseconds{i};
    auto a = f.resume(lease_input::renewed(failed(), now, now));
    BOOST_TEST_REQUIRE(a.what == kind::wait_until);
    BOOST_TEST(((a.at - now) >= 125ms && (a.at - now) <= 250ms));
  }
  BOOST_TEST((f.deadline() == t0 + 2700ms));
  BOOST_TEST(f.resume(lease_input::renewed(failed(), t0 + 2600ms, t0 + 2700ms)).what == kind::lost);
}

// A lease whose clock started before its grant (a lock handed over from the line starts at the
// head's last entry write, docs/design.md section 7): its first renewal is due R after that
// start, not R after the grant, so that it goes out before the deadline with the room a renewal
// has in steady state. Expiry 1 s, margin 100 ms, renew every 600 ms, granted 400 ms in.
BOOST_AUTO_TEST_CASE(a_lease_granted_late_in_its_clock_renews_before_its_deadline) {
  ml::detail::lease_fsm f{t0, 1000ms, 100ms, 600ms, 42};
  BOOST_REQUIRE((f.deadline() == t0 + 900ms));
  auto a = f.resume(lease_input::start(t0 + 400ms));
  BOOST_TEST_REQUIRE(a.what == kind::wait_until);
  BOOST_TEST((a.at == t0 + 600ms), "due R after the clock's start");
  BOOST_TEST(f.resume(lease_input::timer(a.at)).what == kind::renew);
  // Granted past start + R (a shorter expiry in the document moved the start back): due at once.
  ml::detail::lease_fsm g{t0, 1000ms, 100ms, 600ms, 42};
  a = g.resume(lease_input::start(t0 + 750ms));
  BOOST_TEST(a.what == kind::wait_until);
  BOOST_TEST((a.at == t0 + 750ms));
}

BOOST_AUTO_TEST_CASE(watchdog_says_lost_exactly_at_the_deadline) {
  auto f = fresh();
  BOOST_TEST(!f.lost_by(t0 + 2699ms));
  BOOST_TEST(f.lost_by(t0 + 2700ms));
}

BOOST_AUTO_TEST_SUITE_END()
