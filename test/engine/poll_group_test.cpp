// A semaphore's (and a rw_lock writer's) waiting acquire polls every permit it waits on with one
// find per poll (docs/design.md section 10, Waiting and Cost): the waits of one acquire are woken
// together (src/engine/poll_group.hpp) and their reads go out as one `read_each`. Counted on the
// memory store, so deterministic: each poll's find names every permit still waited on, and no
// permit is read on its own after the waits' first reads.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <thread>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"
#include "mongolock/rw_lock.hpp"
#include "mongolock/semaphore.hpp"
#include "engine/acquire.hpp"
#include "engine/poll_group.hpp"

using namespace test;

namespace {

using one_result = std::tuple<error_code, ml::lease>;
using set_result = std::tuple<error_code, ml::multi_lease>;

// A fixed backoff: every wait asks to look again 40 ms after its last read. An expiry of 3 s, so
// no wait in line refreshes its entry within the test's 400 ms (its renewal period is 1 s): a
// refresh is a write of its own (section 7, point 6), one per member and period, which would
// make the counts depend on when each lands.
ml::lock_options fixed_backoff() {
  auto o = fast(3000ms);
  o.backoff_min = 40ms;
  o.backoff_max = 40ms;
  return o;
}

// `n` permits of `theirs` (another provider's semaphore), held.
std::vector<ml::lease> hold_permits(engine& e, ml::semaphore theirs, int n) {
  std::vector<ml::lease> held;
  for (int i = 0; i < n; ++i) {
    auto [ec, got] = run_op<one_result>(e, [&](auto h) { theirs.async_acquire_for(1s, h); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    held.push_back(std::move(got));
  }
  return held;
}

// The single reads (op::read) of documents whose name starts with `prefix`, since call `from`,
// up to `until` after it. At the deadline the waits of a group fail one by one (each has its own
// deadline, microseconds apart): one woken just before its deadline may read with fewer others,
// or alone. That last look is not a poll of the group, so the counts stop before it.
std::size_t single_reads(engine& e, std::size_t from, const std::string& prefix,
                         std::chrono::milliseconds until = 1h) {
  std::size_t n = 0;
  const auto reads = calls_since(e, from, op::read);
  const auto calls = e.store->calls();
  if (calls.size() <= from) return 0;  // no call at all since `from`
  const auto start = calls[from].at;
  for (const auto& c : reads)
    if (c.name.rfind(prefix, 0) == 0 && c.at - start < until) ++n;
  return n;
}

// The finds since call `from`, up to `until` after it (single_reads says why).
std::vector<call_record> finds_since(engine& e, std::size_t from, std::chrono::milliseconds until) {
  const auto calls = e.store->calls();
  std::vector<call_record> out;
  if (calls.size() <= from) return out;
  const auto start = calls[from].at;
  for (auto& c : calls_since(e, from, op::read_each))
    if (c.at - start < until) out.push_back(c);
  return out;
}

// A writer of `name` (R = `permits`) that waits `wait` in vain: `held` of its permits are held
// by readers of another provider. The readers, and the first call of the writer's acquire.
struct writer_waited {
  std::vector<ml::lease> readers;
  std::size_t from = 0;
};
writer_waited a_writer_waits(engine& e, const std::string& name, int permits, int held,
                             std::chrono::milliseconds wait) {
  ml::rw_options o;
  o.max_readers = permits;
  auto them = ml::detail::access::make_provider(other_provider(e)).create_rw_lock(name, o);
  writer_waited w;
  for (int i = 0; i < held; ++i) {
    auto [ec, got] = run_op<one_result>(e, [&](auto h) { them.reader().async_acquire_for(1s, h); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    w.readers.push_back(std::move(got));
  }
  auto rw = ml::detail::access::make_provider(e.p).create_rw_lock(name, o);
  w.from = e.store->calls().size();
  auto [ec, none] = run_op<set_result>(e, [&](auto h) { rw.writer().async_acquire_for(wait, h); });
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  return w;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(poll_group_suite)

// The counts of a semaphore's, a waiting writer's, a parked acquire's and paced looks' polls are
// exact on virtual time: poll_counts_suite (test/sim/poll_counts_test.cpp).

// A writer (R = 8) whose permits 1..7 are held by readers elsewhere: its seven blind takes come
// back "not taken" together, and the seven reads that follow go out as one find
// (read_gathering.hpp). Before: seven single reads.
BOOST_AUTO_TEST_CASE(a_writers_reads_after_its_missed_takes_go_in_one_find) {
  engine e(fixed_backoff());
  auto w = a_writer_waits(e, "rw8", 8, 7, 200ms);
  const auto finds = finds_since(e, w.from, 170ms);
  BOOST_REQUIRE(!finds.empty());
  const auto alone = single_reads(e, w.from, "rw8#", 170ms);
  // One or two may come more than the gathering's 10 ms after the first on a loaded machine.
  BOOST_TEST(alone <= 3u, alone << " single reads (seven before)");
  for (auto& l : w.readers) BOOST_TEST(!e.release(l));
}

// One permit released while the others stay held: the member waiting on it takes it and the
// others are cancelled mid-poll. Nothing hangs, the waiter holds exactly that permit, and every
// line is left (the others' entries go in the background).
BOOST_AUTO_TEST_CASE(a_member_granted_mid_poll_ends_the_group_cleanly) {
  engine e(fixed_backoff());
  auto theirs = hold_permits(e, ml::detail::access::make_provider(other_provider(e)).create_semaphore("g4", 4), 4);
  auto sem = ml::detail::access::make_provider(e.p).create_semaphore("g4", 4);
  auto done = std::make_shared<std::promise<one_result>>();
  auto f = done->get_future();
  sem.async_acquire_for(3s, [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); });
  e.run_for(150ms);  // a few polls
  const auto freed = theirs[2].name();
  BOOST_REQUIRE(!e.release(theirs[2]));
  BOOST_REQUIRE(e.wait(f, 2s));
  auto [ec, got] = f.get();
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST(got.name() == freed);
  e.run_for(150ms);
  const auto from = e.store->calls().size();
  e.run_for(150ms);
  BOOST_TEST(calls_since(e, from, op::read_each).empty(), "the group polls no more");
  BOOST_TEST(single_reads(e, from, "g4#") == 0u);
  for (int k = 1; k <= 4; ++k) {
    const auto n = "g4#" + std::to_string(k);
    BOOST_TEST(e.store->get(n).line.empty(), n << ": the waiter left every line");
  }
  BOOST_TEST(!e.release(got));
  for (std::size_t i = 0; i < theirs.size(); ++i)
    if (i != 2) BOOST_TEST(!e.release(theirs[i]));
}

// Cancelled while its waits are woken and reading together: it completes with operation_aborted
// at once, takes nothing and leaves every line.
BOOST_AUTO_TEST_CASE(a_cancelled_group_leaves_every_line) {
  engine e(fixed_backoff());
  auto theirs = hold_permits(e, ml::detail::access::make_provider(other_provider(e)).create_semaphore("c4", 4), 4);
  auto sem = ml::detail::access::make_provider(e.p).create_semaphore("c4", 4);
  asio::cancellation_signal cancel;
  auto done = std::make_shared<std::promise<one_result>>();
  auto f = done->get_future();
  sem.async_acquire(asio::bind_cancellation_slot(
      cancel.slot(), [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); }));
  e.run_for(130ms);
  cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(f, 1s));
  BOOST_TEST((std::get<0>(f.get()) == asio::error::operation_aborted));
  for (auto& l : theirs) BOOST_REQUIRE(!e.release(l));
  e.run_for(200ms);
  for (int k = 1; k <= 4; ++k) {
    const auto n = "c4#" + std::to_string(k);
    BOOST_TEST(e.store->get(n).held.owner.empty(), n);
    BOOST_TEST(e.store->get(n).line.empty(), n);
  }
}

// Cancelled while the group's find hangs (answered 2 s late): every member's read is its own
// call (async_call), so the acquire completes at once with operation_aborted, without waiting
// for the find; the late answer finds nobody and changes nothing.
BOOST_AUTO_TEST_CASE(a_group_cancelled_during_its_find_does_not_wait_for_it) {
  engine e(fixed_backoff());
  auto theirs = hold_permits(e, ml::detail::access::make_provider(other_provider(e)).create_semaphore("h4", 4), 4);
  auto sem = ml::detail::access::make_provider(e.p).create_semaphore("h4", 4);
  (void)run_op<one_result>(e, [&](auto h) { sem.async_try_acquire(h); });  // its declaration
  e.store->inject(op::read_each, fault(fault::kind::pass));  // the look's find
  e.store->inject(op::read_each, fault(fault::kind::hang, 2000ms));  // the first poll's
  asio::cancellation_signal cancel;
  auto done = std::make_shared<std::promise<one_result>>();
  auto f = done->get_future();
  sem.async_acquire(asio::bind_cancellation_slot(
      cancel.slot(), [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); }));
  BOOST_REQUIRE(run_until(e, [&] { return e.store->count(op::read_each) >= 3u; }, 1s));  // the hung find
  const auto t0 = steady::now();
  cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(f, 1s));
  BOOST_TEST((std::get<0>(f.get()) == asio::error::operation_aborted));
  BOOST_TEST((steady::now() - t0 < 500ms), "not held up by the hung find");
  for (auto& l : theirs) BOOST_REQUIRE(!e.release(l));
  e.run_for(200ms);
  for (int k = 1; k <= 4; ++k) {
    const auto n = "h4#" + std::to_string(k);
    BOOST_TEST(e.store->get(n).held.owner.empty(), n);
    BOOST_TEST(e.store->get(n).line.empty(), n);
  }
}

// The waits on strands of their own, on an executor run by three threads (as a provider's may
// be): the group's state on its own strand, each wait completed on its own. The waiter gets the
// permit released while it polls; under the tsan preset this is the case that races if any state
// is shared without a strand.
BOOST_AUTO_TEST_CASE(a_group_on_a_multi_threaded_executor_gets_the_permit_released) {
  engine e(fixed_backoff());
  auto theirs = hold_permits(e, ml::detail::access::make_provider(other_provider(e)).create_semaphore("t4", 4), 4);
  auto sem = ml::detail::access::make_provider(e.p).create_semaphore("t4", 4);
  auto done = std::make_shared<std::promise<one_result>>();
  auto f = done->get_future();
  sem.async_acquire_for(3s, [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); });
  const auto freed = theirs[1].name();
  auto release = std::make_shared<std::promise<error_code>>();
  auto released = release->get_future();
  auto freeing = asio::make_strand(e.io);
  asio::steady_timer later(freeing, 150ms);
  later.async_wait([&](error_code) { theirs[1].async_release(asio::bind_executor(freeing, [release](error_code ec) {
                                                               release->set_value(ec);
                                                             })); });
  if (e.io.stopped()) e.io.restart();
  auto guard = asio::make_work_guard(e.io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&] { e.io.run_for(1500ms); });
  const bool completed = f.wait_for(1400ms) == std::future_status::ready;
  for (auto& t : threads) t.join();
  guard.reset();
  BOOST_REQUIRE(completed);
  BOOST_REQUIRE(released.wait_for(0s) == std::future_status::ready);
  BOOST_TEST(!released.get());
  auto [ec, got] = f.get();
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST(got.name() == freed);
  BOOST_TEST(!e.release(got));
  for (std::size_t i = 0; i < theirs.size(); ++i)
    if (i != 1) BOOST_TEST(!e.release(theirs[i]));
}

// Two waits of one group that do not end together (not in a parallel group that cancels the
// rest): the one with the earlier deadline fails at it, though the group keeps waking it earlier;
// the other goes on polling without it and fails at its own, on time.
BOOST_AUTO_TEST_CASE(a_wait_that_fails_leaves_the_others_polling_on_time) {
  engine e(fixed_backoff());
  auto other = other_provider(e, fast(3000ms));
  auto la = ml::detail::access::make_lock(other, "ga");
  auto lb = ml::detail::access::make_lock(other, "gb");
  auto [e1, ha] = run_op<one_result>(e, [&](auto h) { la.async_acquire_for(1s, h); });
  auto [e2, hb] = run_op<one_result>(e, [&](auto h) { lb.async_acquire_for(1s, h); });
  BOOST_REQUIRE(!e1);
  BOOST_REQUIRE(!e2);
  auto group = std::make_shared<ml::detail::poll_group>(e.p);
  auto da = std::make_shared<std::promise<error_code>>();
  auto db = std::make_shared<std::promise<error_code>>();
  auto fa = da->get_future();
  auto fb = db->get_future();
  const auto t0 = steady::now();
  auto ta = std::make_shared<steady::time_point>();
  auto tb = std::make_shared<steady::time_point>();
  ml::detail::start_acquire(e.p, "ga", nullptr, true, ml::detail::acquire_mode::wait, 700ms, nullptr,
                            [da, ta](error_code ec, ml::lease) {
                              *ta = steady::now();
                              da->set_value(ec);
                            },
                            group);
  ml::detail::start_acquire(e.p, "gb", nullptr, true, ml::detail::acquire_mode::wait, 210ms, nullptr,
                            [db, tb](error_code ec, ml::lease) {
                              *tb = steady::now();
                              db->set_value(ec);
                            },
                            group);
  group.reset();
  BOOST_REQUIRE(e.wait(fb, 2s));
  const auto from = e.store->calls().size();
  BOOST_REQUIRE(e.wait(fa, 2s));
  BOOST_TEST((fb.get() == ml::errc::timeout));
  BOOST_TEST((fa.get() == ml::errc::timeout));
  auto ms = [&](steady::time_point t) { return std::chrono::duration_cast<std::chrono::milliseconds>(t - t0); };
  // Well before a wait's own guard timer (its `at` + 1 s), which a wait the group stopped waking
  // would fall back on.
  BOOST_TEST((ms(*tb) >= 210ms && ms(*tb) < 460ms), ms(*tb).count() << " ms");
  BOOST_TEST((ms(*ta) >= 700ms && ms(*ta) < 950ms), ms(*ta).count() << " ms");
  BOOST_TEST(single_reads(e, from, "ga") >= 5u, "the remaining wait polled on alone");
  BOOST_TEST(!e.release(ha));
  BOOST_TEST(!e.release(hb));
}

BOOST_AUTO_TEST_SUITE_END()
