// A semaphore's and a rw_lock writer's waits poll every permit with one find per poll (docs/design.md
// section 10, Waiting and Cost), counted exactly on virtual time: one process, its memory store
// answering at once, a fixed backoff of 40 ms. (poll_group_suite counts the same on real time,
// where a wait whose join lands out of phase may read alone once.)
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <optional>

#include "mongolock/rw_lock.hpp"
#include "mongolock/semaphore.hpp"
#include "one_host.hpp"

namespace {

namespace ml = mongolock;
using namespace std::chrono_literals;
using boost::system::error_code;
using test::op;

// A fixed backoff (every wait looks again 40 ms after its last read) and a 3 s expiry: no wait in
// line refreshes its entry within the 400 ms counted (its period is 1 s).
ml::lock_options fixed_backoff() {
  ml::lock_options o;
  o.expiry = 3s;
  o.backoff_min = 40ms;
  o.backoff_max = 40ms;
  return o;
}

// Each find asked for all `n` permits still waited on.
void every_find_reads(const std::vector<std::size_t>& finds, std::size_t n) {
  for (std::size_t i = 0; i < finds.size(); ++i) BOOST_TEST(finds[i] == n, "find " << i << " read " << finds[i]);
}

BOOST_AUTO_TEST_SUITE(poll_counts_suite)

// Four permits held elsewhere; a wait of 400 ms. The look: a blind take, its read, a find of the
// four; then the waits' first reads, one find of the four; then a poll every 40 ms, each one find
// of all four, never a permit read alone.
BOOST_AUTO_TEST_CASE(a_semaphore_wait_polls_all_its_permits_with_one_find_each_time) {
  sim::one_host h{fixed_backoff()};
  const auto held = h.hold_permits("p4", 4);
  auto sem = h.mine.create_semaphore("p4", 4);
  (void)h.run<ml::lease>([&](auto k) { sem.async_try_acquire(k); });  // its declaration
  const auto from = h.store->calls().size();
  const auto began = h.w.now();
  auto [ec, none] = h.run<ml::lease>([&](auto k) { sem.async_acquire_for(400ms, k); });
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  BOOST_TEST((h.w.now() - began).count() == sim::ns{400ms}.count());  // at its deadline, to the nanosecond
  const auto finds = h.since(from, op::read_each, "p4#");
  every_find_reads(finds, 4);
  // The look's, the first reads', and one poll per 40 ms up to the deadline.
  BOOST_TEST(finds.size() == 2u + 9u, finds.size() << " finds");
  BOOST_TEST(h.since(from, op::read, "p4#").size() == 1u, "the look's read, and no other single read");
}

// A rw_lock writer (R = 4) whose permits 1..3 are held by readers elsewhere: it takes NAME#w and
// the free permit, then waits on three; the reads after its three missed takes are one find, and
// so is every poll, never a permit read alone.
BOOST_AUTO_TEST_CASE(a_waiting_writer_polls_its_permits_with_one_find_each_time) {
  sim::one_host h{fixed_backoff()};
  ml::rw_options o;
  o.max_readers = 4;
  auto them = h.theirs.create_rw_lock("rw4", o);
  std::vector<ml::lease> readers;
  for (int i = 0; i < 3; ++i) {
    auto [ec, l] = h.run<ml::lease>([&](auto k) { them.reader().async_acquire_for(1s, k); });
    BOOST_REQUIRE(!ec);
    readers.push_back(std::move(l));
  }
  auto rw = h.mine.create_rw_lock("rw4", o);
  const auto from = h.store->calls().size();
  auto [ec, none] = h.run<ml::multi_lease>([&](auto k) { rw.writer().async_acquire_for(400ms, k); });
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  const auto finds = h.since(from, op::read_each, "rw4#");
  BOOST_REQUIRE(!finds.empty());
  every_find_reads(finds, 3);
  BOOST_TEST(finds.size() == 1u + 9u, finds.size() << " finds");
  BOOST_TEST(h.since(from, op::read, "rw4#").size() == 0u, "no permit read on its own");
}

// Two acquires of one semaphore in one process, the second parked behind the first: once the
// first ends (300 ms), the second's waits take their turns, each with a blind take, and read and
// poll together: every find of the four, no permit read on its own.
BOOST_AUTO_TEST_CASE(a_second_acquire_parked_behind_the_first_polls_with_one_find_each_time) {
  sim::one_host h{fixed_backoff()};
  const auto held = h.hold_permits("two", 4);
  auto sem = h.mine.create_semaphore("two", 4);
  (void)h.run<ml::lease>([&](auto k) { sem.async_try_acquire(k); });  // its declaration
  std::optional<error_code> first, second;
  sem.async_acquire_for(300ms, [&](error_code ec, ml::lease) { first = ec; });
  sem.async_acquire_for(900ms, [&](error_code ec, ml::lease) { second = ec; });
  h.p.mail = true;
  BOOST_REQUIRE(h.w.run_until([&] { return first.has_value(); }, h.w.now() + 1h));
  BOOST_TEST((*first == ml::errc::timeout));
  const auto from = h.store->calls().size();
  BOOST_REQUIRE(h.w.run_until([&] { return second.has_value(); }, h.w.now() + 1h));
  BOOST_TEST((*second == ml::errc::timeout));
  const auto finds = h.since(from, op::read_each, "two#");
  BOOST_TEST(finds.size() >= 10u, finds.size() << " finds in the second's 600 ms alone");
  every_find_reads(finds, 4);
  // The reads after the waits' blind takes are gathered into one find too (read_gathering.hpp).
  BOOST_TEST(h.since(from, op::read, "two#").size() == 0u, "no permit read on its own");
}

// In line with a backoff far longer than the lease (600 ms expiry, 2 s backoff): each wait
// refreshes its entry and looks right after (section 7 point 6), and those looks go out in the
// group's one find: every find of the four, no permit unlooked-at for 500 ms.
BOOST_AUTO_TEST_CASE(the_looks_paced_in_line_go_out_in_the_groups_find_each_time) {
  sim::one_host h{fixed_backoff()};
  auto slow = fixed_backoff();
  slow.expiry = 600ms;
  slow.backoff_min = slow.backoff_max = 2000ms;
  auto mine = h.provider(slow);
  const auto held = h.hold_permits("pace", 4);
  auto sem = mine.create_semaphore("pace", 4);
  (void)h.run<ml::lease>([&](auto k) { sem.async_try_acquire(k); });  // its declaration
  const auto from = h.store->calls().size();
  auto [ec, none] = h.run<ml::lease>([&](auto k) { sem.async_acquire_for(1500ms, k); });
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  const auto finds = h.since(from, op::read_each, "pace#");
  BOOST_TEST(finds.size() >= 5u, finds.size() << " finds");
  every_find_reads(finds, 4);
  BOOST_TEST(h.since(from, op::read, "pace#").size() == 1u, "the look's read, and no other single read");
  std::vector<mongolock::detail::steady_clock::time_point> looks;
  const auto calls = h.store->calls();
  for (std::size_t i = from; i < calls.size(); ++i)
    if (calls[i].what == op::read_each) looks.push_back(calls[i].at);
  for (std::size_t i = 1; i < looks.size(); ++i) BOOST_TEST((looks[i] - looks[i - 1] < 500ms), "poll " << i);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
