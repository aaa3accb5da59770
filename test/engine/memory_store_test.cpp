// The in-memory store behaves as mongo_commands.cpp's commands do on MongoDB where the engine can tell the
// difference: one line entry per owner id, the majority's view apart from the primary's latest
// state, and a rollback to it (docs/design.md section 11).
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"

using namespace test;
using ml::detail::outcome;

namespace {

template <class T, class Start>
outcome<T> call(engine& e, Start start) {
  auto done = std::make_shared<std::promise<outcome<T>>>();
  auto f = done->get_future();
  start([done](outcome<T> r) { done->set_value(std::move(r)); });
  BOOST_REQUIRE(e.wait(f, 2s));
  return f.get();
}

ml::detail::lock_doc read(engine& e, const std::string& name, ml::detail::read_mode how) {
  return call<ml::detail::lock_doc>(e, [&](auto h) { e.store->read(name, how, h); }).value;
}

// `name` held by `holder` with token 5 and beat 7.
const std::string holder = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
void put_held(engine& e, const std::string& name) {
  auto d = free_doc(5);
  d.held = ml::detail::held_state{holder, 5, 7, 1000ms};
  e.store->put(name, d);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(memory_store_fidelity)

// `$set line.<owner>` replaces an entry of the same owner id; `$inc waiting` still counts.
BOOST_AUTO_TEST_CASE(a_second_join_of_one_owner_replaces_its_entry) {
  engine e;
  e.store->put("j", free_doc(5));
  BOOST_REQUIRE(call<bool>(e, [&](auto h) { e.store->join_line("j", "aaaa", 0, h); }).value);
  BOOST_REQUIRE(call<bool>(e, [&](auto h) { e.store->join_line("j", "bbbb", 1, h); }).value);
  BOOST_REQUIRE(call<bool>(e, [&](auto h) { e.store->join_line("j", "aaaa", 2, h); }).value);
  const auto d = e.store->get("j");
  BOOST_REQUIRE(d.line.size() == 2u);
  BOOST_TEST(d.line[0].owner == "bbbb");
  BOOST_TEST(d.line[1].owner == "aaaa");
  BOOST_TEST(d.line[1].ticket == 2);
  BOOST_TEST(d.waiting == 3);
  BOOST_TEST(d.tickets == 3);
}

// A write applied on the primary only: local reads see it, majority reads do not, a rollback
// takes it away; the beats drawn meanwhile are never drawn again.
BOOST_AUTO_TEST_CASE(an_uncommitted_write_is_seen_locally_only_and_rolled_back) {
  engine e;
  auto [ec, held] = e.acquire("u", 1s);
  BOOST_REQUIRE(!ec);
  const auto before = e.store->get("u");
  e.store->inject(op::release, {fault::kind::uncommitted});
  auto r = call<bool>(e, [&, &held = held](auto h) { e.store->release("u", held.owner_id(), held.fencing_token(), h); });
  BOOST_TEST(r.ambiguous);
  const auto local = read(e, "u", ml::detail::read_mode::primary);
  BOOST_TEST(local.held.owner.empty(), "the primary freed it");
  BOOST_TEST(read(e, "u", ml::detail::read_mode::majority).held.owner == held.owner_id(), "the majority did not");
  e.store->rollback();
  const auto after = read(e, "u", ml::detail::read_mode::primary);
  BOOST_TEST(after.held.owner == held.owner_id());
  BOOST_TEST(after.held.beat == before.held.beat);
  BOOST_TEST(local.held.beat != before.held.beat);
}

// Freeing by owner touches only the named documents.
BOOST_AUTO_TEST_CASE(freeing_by_owner_touches_only_the_named_documents) {
  engine e;
  auto d = free_doc(5);
  d.held.owner = "cccc";
  e.store->put("a", d);
  e.store->put("b", d);
  auto n = call<std::int64_t>(e, [&](auto h) { e.store->release_owners({"a"}, {"cccc"}, h); });
  BOOST_TEST(n.value == 1);
  BOOST_TEST(e.store->get("a").held.owner.empty());
  BOOST_TEST(e.store->get("b").held.owner == "cccc");
}

// After an uncommitted renewal, a waiter's take against the majority's view lands there; the
// store must answer it as it landed, and the holder's next renewal must not be told it matched
// while every majority read names the waiter (a split no MongoDB deployment shows).
BOOST_AUTO_TEST_CASE(a_write_while_the_views_are_apart_is_answered_as_the_majority_took_it) {
  engine e;
  put_held(e, "v");
  const auto committed = read(e, "v", ml::detail::read_mode::majority);
  e.store->inject(op::renew, {fault::kind::uncommitted});
  auto rn = call<std::vector<bool>>(e, [&](auto h) { e.store->renew({{"v", holder, 5}}, 1000ms, h); });
  BOOST_TEST(rn.ambiguous);
  ml::detail::take_request t;
  t.name = "v";
  t.owner = "ffffffffffffffffffffffffffffffff";
  t.token = committed.held.token + 1;
  t.expiry = 1000ms;
  t.observed = committed;  // what the waiter's majority reads showed for E + m
  auto tk = call<bool>(e, [&](auto h) { e.store->take(t, h); });
  BOOST_TEST(!tk.ec);
  BOOST_TEST(tk.value, "the take landed in the majority's view");
  BOOST_TEST(read(e, "v", ml::detail::read_mode::majority).held.owner == t.owner);
  auto rn2 = call<std::vector<bool>>(e, [&](auto h) { e.store->renew({{"v", holder, 5}}, 1000ms, h); });
  BOOST_TEST(!(!rn2.ec && rn2.value.size() == 1 && rn2.value[0]), "the holder was told it renewed a lock it lost");
}

// libmongoc's resend of a single-document write (docs/design.md section 2): the first attempt
// lands on the old primary only, the failover rolls it back, and the identical command lands
// again on the new primary: the same beat, the same values. With no delay after the failover,
// the caller gets the resend's reply.
BOOST_AUTO_TEST_CASE(a_resent_write_lands_again_with_its_beat_after_the_rollback) {
  engine e;
  put_held(e, "r");
  e.store->inject(op::renew, fault::resend(100ms));
  auto done = std::make_shared<std::promise<outcome<std::vector<bool>>>>();
  auto f = done->get_future();
  e.store->renew({{"r", holder, 5}}, 1000ms, [done](outcome<std::vector<bool>> r) { done->set_value(std::move(r)); });
  const auto first = read(e, "r", ml::detail::read_mode::primary);
  BOOST_TEST(first.held.beat != 7, "the first attempt is on the old primary");
  BOOST_TEST(read(e, "r", ml::detail::read_mode::majority).held.beat == 7, "and not committed");
  BOOST_REQUIRE(e.wait(f, 2s));
  const auto rn = f.get();
  BOOST_TEST(!rn.ec, rn.message);
  BOOST_TEST((rn.value == std::vector<bool>{true}), "the caller sees the resend's reply");
  const auto after = read(e, "r", ml::detail::read_mode::majority);
  BOOST_TEST(after.held.owner == holder);
  BOOST_TEST(after.held.token == 5);
  BOOST_TEST(after.held.beat == first.held.beat, "the resend writes the first attempt's beat");
  BOOST_TEST(after.renewed_at_ms == first.renewed_at_ms, "and its other values");
}

// A resend late after the failover: the caller is answered ambiguous first (the old state is
// back on the new primary), and the first attempt's triple returns when the resend lands.
BOOST_AUTO_TEST_CASE(a_late_resend_restores_the_first_attempts_triple_after_the_answer) {
  engine e;
  auto [ec, held] = e.acquire("l", 1s);
  BOOST_REQUIRE(!ec);
  const auto before = e.store->get("l").held;
  e.store->inject(op::release, fault::resend(50ms, 200ms));
  auto r = call<bool>(e, [&, &held = held](auto h) { e.store->release("l", held.owner_id(), held.fencing_token(), h); });
  BOOST_TEST(r.ambiguous);
  const auto rolled_back = read(e, "l", ml::detail::read_mode::primary);
  BOOST_TEST(rolled_back.held.owner == held.owner_id(), "the failover took the release away");
  BOOST_TEST(rolled_back.held.beat == before.beat);
  BOOST_REQUIRE(run_until(e, [&] { return read(e, "l", ml::detail::read_mode::majority).held.owner.empty(); }, 2s));
  const auto resent = read(e, "l", ml::detail::read_mode::majority);
  BOOST_TEST(resent.held.owner.empty(), "the resend freed it");
  BOOST_TEST(resent.held.beat != before.beat);
}

// The driver's force release reads the holder and updates with it in the filter: an update
// resent or applied after the holder changed frees nobody (the simulation found the store freeing
// the next holder instead, both ways).
BOOST_AUTO_TEST_CASE(a_late_force_release_frees_only_the_holder_it_read) {
  for (const auto& late : {fault::resend(50ms, 200ms), fault(fault::kind::apply_late, 250ms)}) {
    engine e;
    put_held(e, "f");
    e.store->inject(op::force_release, late);
    auto r = call<std::string>(e, [&](auto h) { e.store->force_release("f", true, h); });
    BOOST_TEST(r.ambiguous);
    BOOST_REQUIRE(read(e, "f", ml::detail::read_mode::primary).held.owner == holder);  // not applied yet, or rolled back
    // Before the write lands, the holder lets go and another takes the lock.
    auto next = e.store->get("f");
    next.held = ml::detail::held_state{"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 6, 8, 1000ms};
    e.store->put("f", next);
    e.run_for(400ms);
    BOOST_TEST(e.store->count(op::force_release) == 1u);
    BOOST_TEST(read(e, "f", ml::detail::read_mode::majority).held.owner == next.held.owner);
    BOOST_TEST(read(e, "f", ml::detail::read_mode::primary).held.owner == next.held.owner);
  }
}

// A multi-document update (a renewal of two leases) is never resent: the failover rolls it back
// and nothing brings it back.
BOOST_AUTO_TEST_CASE(a_renewal_of_two_leases_is_not_resent) {
  engine e;
  put_held(e, "a");
  put_held(e, "b");
  e.store->inject(op::renew, fault::resend(50ms));
  auto rn = call<std::vector<bool>>(e, [&](auto h) { e.store->renew({{"a", holder, 5}, {"b", holder, 5}}, 1000ms, h); });
  BOOST_TEST(rn.ambiguous);
  e.run_for(200ms);
  for (const char* name : {"a", "b"}) {
    BOOST_TEST(read(e, name, ml::detail::read_mode::primary).held.beat == 7, name);
    BOOST_TEST(read(e, name, ml::detail::read_mode::majority).held.beat == 7, name);
  }
  BOOST_TEST(e.store->count(op::renew) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
