// The time seam (docs/design.md section 11, "Virtual time"): the library's clocks and timers run
// on a simulated process's clocks, and the world jumps from one timer to the next.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <vector>

#include "engine/access.hpp"
#include "engine/provider_impl.hpp"
#include "memory_store.hpp"
#include "model/clocks.hpp"
#include "mongolock/lock.hpp"
#include "world.hpp"

namespace {

namespace asio = boost::asio;
namespace ml = mongolock;
using namespace std::chrono_literals;
using boost::system::error_code;
using sim::ns;

BOOST_AUTO_TEST_SUITE(virtual_time_suite)

BOOST_AUTO_TEST_CASE(timers_fire_at_their_virtual_times_in_order) {
  sim::world w;
  auto& p = w.add_process();
  std::vector<std::pair<int, ns>> fired;
  ml::detail::boot_timer a(p.io);
  ml::detail::steady_timer b(p.io);
  ml::detail::boot_timer c(p.io);
  {
    const sim::inside mine(p);  // expiries are read off the process's clocks
    a.expires_after(5s);
    b.expires_after(2s);
    c.expires_after(1h);
    a.async_wait([&](error_code) { fired.emplace_back(1, w.now()); });
    b.async_wait([&](error_code) { fired.emplace_back(2, w.now()); });
    c.async_wait([&](error_code) { fired.emplace_back(3, w.now()); });
  }
  BOOST_TEST(w.run_until([&] { return fired.size() == 3; }, 2h));
  BOOST_REQUIRE_EQUAL(fired.size(), 3u);
  BOOST_TEST(fired[0].first == 2);
  BOOST_TEST(fired[0].second.count() == ns{2s}.count());
  BOOST_TEST(fired[1].first == 1);
  BOOST_TEST(fired[1].second.count() == ns{5s}.count());
  BOOST_TEST(fired[2].first == 3);
  BOOST_TEST(fired[2].second.count() == ns{1h}.count());
  BOOST_TEST(w.steps() <= 6u);  // one jump per timer (and a look after each), never a sleep or a tick
}

BOOST_AUTO_TEST_CASE(a_cancelled_earliest_timer_does_not_hold_time_back) {
  sim::world w;
  auto& p = w.add_process();
  ml::detail::steady_timer early(p.io), late(p.io);
  error_code early_ec;
  ns early_at{-1}, late_at{-1};
  {
    const sim::inside mine(p);
    early.expires_after(1s);
    late.expires_after(3s);
    early.async_wait([&](error_code e) { early_ec = e, early_at = w.now(); });
    late.async_wait([&](error_code) { late_at = w.now(); });
  }
  w.run_for(10ms);  // both armed and reported
  {
    const sim::inside mine(p);  // a call into the process from outside: the world polls it next
    early.cancel();
  }
  BOOST_TEST(w.run_until([&] { return late_at >= ns{0}; }, 1h));
  BOOST_TEST((early_ec == asio::error::operation_aborted), early_ec.message());
  BOOST_TEST(early_at.count() == ns{10ms}.count());
  BOOST_TEST(late_at.count() == ns{3s}.count());
}

BOOST_AUTO_TEST_CASE(each_process_keeps_its_own_clock_rate_and_wall_clock) {
  sim::world w;
  auto& fast = w.add_process(10'000, 1h, ns{1'000s});   // 1 % fast
  auto& slow = w.add_process(-10'000, 2h, ns{5'000s});  // 1 % slow
  ns fast_at{-1}, slow_at{-1};
  ml::detail::boot_timer f(fast.io), s(slow.io);
  {
    const sim::inside mine(fast);
    f.expires_after(1010ms);  // 1.01 s of its clock: 1 s of true time
    f.async_wait([&](error_code) { fast_at = w.now(); });
    BOOST_TEST(ml::detail::wall_clock::now().time_since_epoch() == std::chrono::seconds{1'000});
  }
  {
    const sim::inside mine(slow);
    s.expires_after(990ms);  // 0.99 s of its clock: 1 s of true time
    s.async_wait([&](error_code) { slow_at = w.now(); });
  }
  BOOST_TEST(w.run_until([&] { return fast_at >= ns{0} && slow_at >= ns{0}; }, 1h));
  BOOST_TEST(fast_at.count() == ns{1s}.count());
  BOOST_TEST(slow_at.count() == ns{1s}.count());
  const sim::inside mine(fast);
  BOOST_TEST((ml::detail::boot_clock::now().time_since_epoch() - ns{1h}).count() == ns{1010ms}.count());
  BOOST_TEST((ml::detail::wall_clock::now().time_since_epoch() - std::chrono::seconds{1'000}).count() == ns{1010ms}.count());
  fast.clock.suspended_for(5s);  // a suspend: the boot clock counted it, the steady clock did not
  BOOST_TEST((ml::detail::boot_clock::now().time_since_epoch() - ml::detail::steady_clock::now().time_since_epoch()).count() ==
             ns{5s}.count());
}

// A real provider on the memory store, on virtual time: ten simulated minutes of a held lease.
struct held_for_ten_minutes {
  sim::world w;
  sim::process& p = w.add_process();
  // The test's own calls (the store's faults, the lease's waits) read this process's clocks too.
  const sim::inside mine{p};
  std::shared_ptr<test::memory_store> store = std::make_shared<test::memory_store>(p.io.get_executor());
  std::shared_ptr<ml::detail::provider_impl> provider;
  ml::lease held;
  error_code acquired_ec = asio::error::would_block;

  held_for_ten_minutes() {
    ml::lock_options o;
    o.expiry = 30s;  // margin 3 s
    provider = std::make_shared<ml::detail::provider_impl>(p.io.get_executor(), store, o, nullptr);
    ml::detail::access::make_lock(provider, "job").async_acquire_for(1s, [this](error_code ec, ml::lease l) {
      acquired_ec = ec;
      held = std::move(l);
    });
    BOOST_REQUIRE(w.run_until([&] { return acquired_ec != asio::error::would_block; }, 1s));
    BOOST_REQUIRE(!acquired_ec);
  }
  std::size_t renewals() const { return store->count(test::op::renew); }
};

BOOST_FIXTURE_TEST_CASE(a_lease_renews_itself_for_ten_simulated_minutes, held_for_ten_minutes) {
  w.run_for(10min);
  BOOST_TEST(!held.status());  // every renewal came before the local deadline (27 s after the last)
  // At most 27 s apart and at least a jittered half period (renew_every = 6 s) apart.
  BOOST_TEST(renewals() >= 600u / 27u);
  BOOST_TEST(renewals() <= 600u / 3u);
  BOOST_TEST(w.steps() <= 4 * renewals() + 8);  // time jumps from renewal to renewal
  const auto at = store->calls().back().at.time_since_epoch();
  BOOST_TEST(at > ns{1h + 10min - 27s});  // the store's clock is the process's (boot at 1 h)
  BOOST_TEST(at <= ns{1h + 10min});
}

BOOST_FIXTURE_TEST_CASE(a_lease_that_cannot_renew_is_lost_at_its_local_deadline, held_for_ten_minutes) {
  store->unreachable_for(1h, 5s);
  ns lost_at{-1};
  error_code why;
  held.async_wait_lost([&](error_code ec) { why = ec, lost_at = w.now(); });
  BOOST_TEST(w.run_until([&] { return lost_at >= ns{0}; }, 2min));
  BOOST_TEST((why == ml::errc::lease_lost), why.message());
  BOOST_TEST(lost_at.count() == ns{27s}.count());  // sent at 0, expiry 30 s less the 3 s margin
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
