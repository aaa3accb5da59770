// The clock-rate rule at its edge (docs/design.md section 6), on the decisions the library really
// makes: the holder's lease_fsm deadline and a waiter's acquire_fsm observation. In real time, the
// holder's last successful renewal is sent and applied at 0 and the waiter sees it at once, polling
// every millisecond after. The holder's clock runs at rate rh, the waiter's at rw (local seconds
// per real second). The holder stops at (E - m) / rh, the waiter takes over at (E + m) / rw: safe
// exactly while rw / rh < (E + m) / (E - m). README and docs/design.md state the rule; integration
// test clock_rates/* checks it on real processes under libfaketime.
#include <boost/test/unit_test.hpp>

#include "sansio/acquire_fsm.hpp"
#include "sansio/lease_fsm.hpp"

namespace ml = mongolock;
using namespace ml::detail;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

namespace {

const boot_clock::time_point t0{std::chrono::hours{1}};

boot_clock::time_point local(double rate, std::chrono::microseconds real) {
  return t0 + std::chrono::duration_cast<boot_clock::duration>(real * rate);
}

// Real time (microseconds) at which the holder's watchdog calls the lease lost.
std::int64_t holder_stops(double rh, ms expiry, ms margin) {
  lease_fsm holder(t0, expiry, margin, expiry / 3, 1);
  std::chrono::microseconds real{0};
  while (!holder.lost_by(local(rh, real)))
    if ((real += 100us) > 10min) BOOST_FAIL("the holder never stops");
  return real.count();
}

// Real time at which a waiter that saw the holder's last heartbeat at 0 decides to take over.
std::int64_t waiter_takes_over(double rw, ms expiry, ms margin) {
  acquire_params p;
  p.owner = "waiter";
  p.expiry = expiry, p.margin = margin, p.backoff_min = 1ms, p.backoff_max = 1ms;
  acquire_fsm waiter("x", p);
  lock_doc held;
  held.exists = true;
  held.held = held_state{"holder", 7, 3, expiry};
  waiter.resume(acquire_input::start(local(rw, 0us)));
  for (std::chrono::microseconds real{0}; real < 10min; real += 100us)
    if (waiter.resume(acquire_input::read(success(held), local(rw, real))).what == acquire_action::kind::take)
      return real.count();
  BOOST_FAIL("the waiter never takes over");
  return 0;
}

bool overlaps(double rh, double rw, ms expiry, ms margin) {
  return waiter_takes_over(rw, expiry, margin) < holder_stops(rh, expiry, margin);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(clock_rate_rule)

BOOST_AUTO_TEST_CASE(a_waiter_faster_than_the_holder_is_safe_up_to_the_ratio_and_not_beyond) {
  for (auto [expiry, margin] : std::initializer_list<std::pair<ms, ms>>{{10s, 1s}, {10s, 2500ms}, {4s, 400ms}}) {
    const double edge = double((expiry + margin).count()) / double((expiry - margin).count());
    BOOST_TEST_CONTEXT("expiry " << expiry.count() << " ms, margin " << margin.count() << " ms, edge " << edge) {
      BOOST_TEST(!overlaps(1.0, edge * 0.99, expiry, margin));
      BOOST_TEST(overlaps(1.0, edge * 1.01, expiry, margin));
      BOOST_TEST(!overlaps(1.0 / (edge * 0.99), 1.0, expiry, margin), "a slow holder clock counts the same");
      BOOST_TEST(overlaps(1.0 / (edge * 1.01), 1.0, expiry, margin));
    }
  }
}

// The symmetric form: each clock within 1 +- e of real time is safe while e < m / E.
BOOST_AUTO_TEST_CASE(clocks_each_off_by_less_than_margin_over_expiry_are_safe) {
  const ms expiry = 10s, margin = 1s;  // the default margin: E / 10
  BOOST_TEST(!overlaps(1 - 0.099, 1 + 0.099, expiry, margin));
  BOOST_TEST(overlaps(1 - 0.101, 1 + 0.101, expiry, margin));
  // The black-box finding this rule explains: holder 0.8x and waiter 1.25x overlap at 10 %,
  // and a 25 % margin covers them ((E + m) / (E - m) = 1.67 > 1.25 / 0.8 = 1.5625).
  BOOST_TEST(overlaps(0.8, 1.25, expiry, margin));
  BOOST_TEST(!overlaps(0.8, 1.25, expiry, 2500ms));
}

BOOST_AUTO_TEST_SUITE_END()
