// Gathering a set (docs/design.md section 14): the takes and releases of a set the caller is about
// to make, one operation per name, go out as one command once every member has reached the store;
// a member that never does holds the others back only until the gathering's bound. Used by a
// rw_lock writer's permits, a multi-lock's first look and a set's release.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "engine_harness.hpp"
#include "mongolock/multi_lock.hpp"
#include "mongolock/rw_lock.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

// `name` free: its acquire takes at once, without a read (the blind take).
void plant_free(engine& e, const std::string& name) { e.store->put(name, free_doc(5)); }

std::shared_ptr<waiter> try_one(engine& e, const std::string& name) {
  auto w = std::make_shared<waiter>();
  e.lock(name).async_try_acquire([w](error_code ec, ml::lease l) {
    w->ec = ec;
    w->held = std::move(l);
    w->done = true;
  });
  return w;
}

std::size_t sent(engine& e) { return e.store->count(op::take) + e.store->count(op::write_grouped); }

// The statements of each grouped command since call `from`, in order (a record's token is its count).
std::vector<std::int64_t> grouped_sizes(engine& e, std::size_t from) {
  std::vector<std::int64_t> out;
  const auto calls = e.store->calls();
  for (std::size_t i = from; i < calls.size(); ++i)
    if (calls[i].what == op::write_grouped) out.push_back(calls[i].token);
  return out;
}

// The store's calls of kind `what` on `name` since call `from`.
std::size_t calls_on(engine& e, std::size_t from, const std::string& name, op what) {
  const auto calls = calls_since(e, from, what);
  return static_cast<std::size_t>(std::count_if(calls.begin(), calls.end(), [&](const call_record& c) { return c.name == name; }));
}



using set_result = std::tuple<error_code, ml::multi_lease>;

// Two cycles of taking a set of `size` leases with `acquire(handler)` and releasing it: the first
// reads each document, the second knows them free from its own release. The index of the store's
// first call of the second cycle.
template <class Acquire>
std::size_t second_cycle_from(engine& e, std::size_t size, Acquire acquire) {
  std::size_t from = 0;
  for (int cycle = 0; cycle < 2; ++cycle) {
    from = e.store->calls().size();
    auto [ec, held] = run_op<set_result>(e, acquire);
    BOOST_REQUIRE(!ec);
    BOOST_TEST(held.leases().size() == size);
    BOOST_TEST(!release(e, held));
  }
  return from;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gather_suite)

BOOST_AUTO_TEST_CASE(a_gathered_set_goes_as_one_command_once_every_member_reached_the_store) {
  engine e;
  for (auto n : {"a", "b", "c"}) plant_free(e, n);
  auto gathering = e.p->grouped->gather(e.p->ex, {"a", "b", "c"}, 10s);
  auto a = try_one(e, "a"), b = try_one(e, "b");
  e.run_for(50ms);
  BOOST_TEST(sent(e) == 0u);  // held: "c" has not reached the store yet
  auto c = try_one(e, "c");
  BOOST_REQUIRE(run_until(e, [&] { return a->done && b->done && c->done; }, 3s));  // long before the 10 s bound
  for (auto& w : {a, b, c}) BOOST_TEST((!w->ec && w->held.held()));
  BOOST_TEST(e.store->count(op::take) == 0u);
  BOOST_TEST(grouped_sizes(e, 0) == std::vector<std::int64_t>{3});
}

BOOST_AUTO_TEST_CASE(a_member_that_never_reaches_the_store_holds_the_others_only_until_the_bound) {
  // A bound of 1 s, so that the look 100 ms in comes before it also on a loaded machine; 5 s
  // leases, so that the held takes are still within their own bound (sent + E - m, docs/design.md
  // section 14) when the gathering goes.
  engine e(fast(5000ms));
  for (auto n : {"a", "b"}) plant_free(e, n);
  auto gathering = e.p->grouped->gather(e.p->ex, {"a", "b", "never"}, 1000ms);
  auto a = try_one(e, "a"), b = try_one(e, "b");
  e.run_for(100ms);
  BOOST_TEST(sent(e) == 0u);
  BOOST_REQUIRE(run_until(e, [&] { return a->done && b->done; }, 3s));
  BOOST_TEST((!a->ec && !b->ec));
  BOOST_TEST(grouped_sizes(e, 0) == std::vector<std::int64_t>{2});
}

BOOST_AUTO_TEST_CASE(dropping_the_handle_sends_what_was_held) {
  engine e;
  plant_free(e, "a");
  auto gathering = e.p->grouped->gather(e.p->ex, {"a", "b"}, 10s);
  auto a = try_one(e, "a");
  e.run_for(50ms);
  BOOST_TEST(sent(e) == 0u);
  gathering.reset();
  BOOST_REQUIRE(run_until(e, [&] { return a->done; }, 3s));
  BOOST_TEST(!a->ec);
  BOOST_TEST(e.store->count(op::take) == 1u);  // alone: its own single command
}

// A read (the member did not know its document) and a park (behind another acquire of its name
// in this provider) each count as heard from: the others go without waiting for the bound.
BOOST_AUTO_TEST_CASE(a_member_that_reads_or_parks_does_not_hold_the_set_back) {
  engine e;
  auto unknown = free_doc(5);  // its token ahead of any clock: the blind take misses, the try reads
  unknown.held.token = std::numeric_limits<std::int64_t>::max() - 10;
  e.store->put("unknown", unknown);
  plant_free(e, "b");
  auto [ec, mine] = e.acquire("parked", std::nullopt);
  BOOST_REQUIRE(!ec);
  auto gathering = e.p->grouped->gather(e.p->ex, {"unknown", "parked", "b"}, 10s);
  auto u = try_one(e, "unknown");
  auto p = wait_for_lock(e.p, "parked", 5s);  // parks behind `mine`
  auto b = try_one(e, "b");
  BOOST_REQUIRE(run_until(e, [&] { return u->done && b->done; }, 3s));
  BOOST_TEST((!u->ec && !b->ec));
  BOOST_TEST(e.store->count(op::read) >= 1u, "the member that read");
  BOOST_TEST(!p->done);
  BOOST_TEST(!e.release(mine));
  BOOST_REQUIRE(run_until(e, [&] { return p->done; }, 3s));
  BOOST_TEST(!p->ec);
}

// An uncontended write: NAME#w, then every permit in one command, and the whole set released in
// one.
BOOST_AUTO_TEST_CASE(a_rw_lock_write_cycle_is_three_commands) {
  engine e;
  ml::rw_options o;
  o.max_readers = 16;
  auto rw = ml::detail::access::make_provider(e.p).create_rw_lock("x", o);
  const auto from = second_cycle_from(e, 17, [&](auto h) { rw.writer().async_acquire(h); });
  BOOST_TEST(e.store->calls().size() - from == 3u);
  BOOST_TEST(grouped_sizes(e, from) == (std::vector<std::int64_t>{16, 17}));
  BOOST_TEST(e.p->grouped->gatherings_at_bound() == 0u);  // each went as its last member arrived
  for (int k = 1; k <= 16; ++k) BOOST_TEST(e.store->get("x#" + std::to_string(k)).held.owner.empty());
}

// A multi-lock of free locks: its first look takes them all in one command; its release is one.
BOOST_AUTO_TEST_CASE(a_multi_lock_of_free_locks_is_one_command_to_take_and_one_to_release) {
  engine e;
  auto set = ml::detail::access::make_provider(e.p).create_multi_lock({"m1", "m2", "m3", "m4"});
  const auto from = second_cycle_from(e, 4, [&](auto h) { set.async_acquire(h); });
  BOOST_TEST(e.store->calls().size() - from == 2u);
  BOOST_TEST(grouped_sizes(e, from) == (std::vector<std::int64_t>{4, 4}));
}

// The first look finds one lock held: what it got is given back, and the ordered wait takes the
// set once the holder lets go.
BOOST_AUTO_TEST_CASE(a_multi_lock_whose_first_look_finds_one_held_waits_in_order_for_the_set) {
  engine e;
  auto other = other_provider(e);
  auto [ec, theirs] = e.acquire("n2", std::nullopt);
  BOOST_REQUIRE(!ec);
  auto set = ml::detail::access::make_provider(other).create_multi_lock({"n1", "n2", "n3"});
  auto done = std::make_shared<std::promise<set_result>>();
  auto f = done->get_future();
  set.async_acquire_for(5s, [done](error_code ec, ml::multi_lease got) { done->set_value({ec, std::move(got)}); });
  e.run_for(100ms);
  // The first look took n1 and n3 and gave them back; the ordered wait holds n1 and waits for n2.
  BOOST_TEST(!e.store->get("n1").held.owner.empty());
  BOOST_TEST(e.store->get("n3").held.owner.empty());
  BOOST_TEST(e.store->get("n3").held.token > 0);
  BOOST_TEST(!e.release(theirs));
  BOOST_REQUIRE(e.wait(f, 5s));
  auto [got_ec, got] = f.get();
  BOOST_TEST(!got_ec);
  BOOST_TEST(got.leases().size() == 3u);
}

// Shutdown releases every live lease: one command for all of them.
BOOST_AUTO_TEST_CASE(shutdown_releases_its_leases_in_one_command) {
  engine e;
  std::vector<ml::lease> held;
  for (auto n : {"s1", "s2", "s3", "s4", "s5", "s6"}) {
    auto [ec, l] = e.acquire(n, std::nullopt);
    BOOST_REQUIRE(!ec);
    held.push_back(std::move(l));
  }
  const auto from = e.store->calls().size();
  auto done = engine::ec_future([&](auto h) { ml::detail::access::make_provider(e.p).async_shutdown(h); });
  BOOST_REQUIRE(e.wait(done, 5s));
  BOOST_TEST(!done.get());
  BOOST_TEST(grouped_sizes(e, from) == std::vector<std::int64_t>{6});
  BOOST_TEST(e.store->count(op::release) == 0u);
  for (auto n : {"s1", "s2", "s3", "s4", "s5", "s6"}) BOOST_TEST(e.store->get(n).held.owner.empty(), n);
}

// A late grant in the first look (its reply after the take's bound) ends that try, not the
// waiting multi-lock: the ordered wait takes the set, as a single wait goes on to a fresh take.
BOOST_AUTO_TEST_CASE(a_late_grant_in_the_first_look_does_not_end_a_waiting_multi_lock) {
  engine e(fast(1000ms));
  e.store->inject(op::write_grouped, {fault::kind::hang, 1500ms});  // the first look's blind takes
  auto set = ml::detail::access::make_provider(e.p).create_multi_lock({"late-a", "late-b"});
  auto [ec, held] = run_op<set_result>(e, [&](auto h) { set.async_acquire_for(5s, h); });
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(held.leases().size() == 2u);
}

// A member whose lease was lost makes no store call on release: the others' releases do not
// wait for it (the gathering names only the leases still held).
BOOST_AUTO_TEST_CASE(a_lost_member_does_not_hold_back_the_release_of_the_others) {
  engine e;
  auto set = ml::detail::access::make_provider(e.p).create_multi_lock({"lost-a", "lost-b"});
  auto [ec, held] = run_op<set_result>(e, [&](auto h) { set.async_acquire_for(2s, h); });
  BOOST_REQUIRE(!ec);
  auto doc = e.store->get("lost-a");  // someone else writes over lost-a: its next renewal loses it
  doc.held.owner = "intruder";
  doc.held.token += 100;
  e.store->put("lost-a", doc);
  BOOST_REQUIRE(run_until(e, [&, &held = held] { return held.leases()[0].status() == ml::errc::lease_lost; }, 3s));
  const auto before = e.p->grouped->gatherings_at_bound();
  BOOST_TEST((release(e, held) == ml::errc::lease_lost));
  BOOST_TEST(e.store->get("lost-b").held.owner.empty());
  BOOST_TEST(e.p->grouped->gatherings_at_bound() == before);
}

// The first look's leases hold their names' turns in this provider (section 7), as a waiting
// acquire's lease does: another waiting acquire of one of those names parks behind the set (no
// read, no entry in the line) and the set's release hands the name over here.
BOOST_AUTO_TEST_CASE(a_first_look_lease_holds_its_names_turn_in_the_provider) {
  engine e;
  auto set = ml::detail::access::make_provider(e.p).create_multi_lock({"turn-a", "turn-b"});
  auto [ec, held] = run_op<set_result>(e, [&](auto h) { set.async_acquire_for(2s, h); });
  BOOST_REQUIRE(!ec);
  const auto from = e.store->calls().size();
  auto w = wait_for_lock(e.p, "turn-a", 5s);
  e.run_for(200ms);
  BOOST_TEST(!w->done);
  BOOST_TEST(!release(e, held));
  BOOST_REQUIRE(run_until(e, [&] { return w->done; }, 3s));
  BOOST_TEST(!w->ec);
  BOOST_TEST(calls_on(e, from, "turn-a", op::read) == 0u);  // parked, then took the document its release left
  BOOST_TEST(calls_on(e, from, "turn-a", op::join_line) == 0u);
}

// A first look whose name's turn another acquire of this provider has is busy at once for that
// name (section 7): no read of it; what it took is given back, and the ordered wait parks behind
// that acquire and takes the set after it.
BOOST_AUTO_TEST_CASE(a_first_look_is_busy_at_once_for_a_name_whose_turn_another_acquire_has) {
  engine e;
  e.store->inject(op::take, {fault::kind::hang, 2000ms});  // the local wait's blind take: it keeps the turn
  auto local = wait_for_lock(e.p, "busy-a", 5s);
  e.run_for(100ms);
  BOOST_REQUIRE(!local->done);
  const auto from = e.store->calls().size();
  auto set = ml::detail::access::make_provider(e.p).create_multi_lock({"busy-a", "busy-b"});
  auto done = std::make_shared<std::promise<set_result>>();
  auto f = done->get_future();
  set.async_acquire_for(8s, [done](error_code ec, ml::multi_lease got) { done->set_value({ec, std::move(got)}); });
  e.run_for(300ms);
  BOOST_TEST((f.wait_for(0s) == std::future_status::timeout), "busy-a is the local wait's");
  BOOST_TEST(calls_on(e, from, "busy-a", op::read) == 0u);
  BOOST_TEST(e.store->get("busy-b").held.owner.empty());  // taken by the look, given back
  BOOST_REQUIRE(run_until(e, [&] { return local->done; }, 5s));
  BOOST_REQUIRE(!local->ec);
  BOOST_TEST(!e.release(local->held));
  BOOST_REQUIRE(e.wait(f, 5s));
  auto [ec, got] = f.get();
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(got.leases().size() == 2u);
  BOOST_TEST(!release(e, got));
}

BOOST_AUTO_TEST_SUITE_END()
