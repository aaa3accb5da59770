// Group commit (docs/design.md section 14): takes and releases of one provider that are ready
// while earlier ones are in flight share one command, and each still gets its own outcome by
// every rule of the single command. On the in-memory store, which answers a grouped command as the
// server does (a matched count; a read when it is short) and breaks it on purpose.
//
// How a group is made here: the first two takes (or releases) hang, so the commands in flight are
// at their limit, and whatever becomes ready meanwhile queues and goes out as one command.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

constexpr int n = 8;          // acquires at once
constexpr int grouped = n - 2;  // all but the two in flight

std::string name_of(int i) { return "g" + std::to_string(i); }

// n free documents, so that each acquire takes after one read.
void plant_free(engine& e) {
  for (int i = 0; i < n; ++i) e.store->put(name_of(i), free_doc(5));
}

// The first `k` calls of `o` hang for `d`: the limit of commands in flight is reached (two for
// takes, four for releases: group_commit.hpp).
void hold_in_flight(engine& e, op o, std::chrono::milliseconds d = 60ms, int k = 2) {
  for (int i = 0; i < k; ++i) e.store->inject(o, fault(fault::kind::hang, d));
}
void hold_two_in_flight(engine& e, op o, std::chrono::milliseconds d = 60ms) { hold_in_flight(e, o, d, 2); }

// n tries at once (one look each, so a lost race or an ambiguous take ends them).
std::vector<std::shared_ptr<waiter>> try_all(engine& e) {
  std::vector<std::shared_ptr<waiter>> out;
  for (int i = 0; i < n; ++i) {
    auto w = std::make_shared<waiter>();
    e.lock(name_of(i)).async_try_acquire([w](error_code ec, ml::lease l) {
      w->ec = ec;
      w->held = std::move(l);
      w->done = true;
    });
    out.push_back(w);
  }
  return out;
}

bool all_done(const std::vector<std::shared_ptr<waiter>>& ws) {
  for (auto& w : ws)
    if (!w->done) return false;
  return true;
}

// The one grouped command's record: its statements' names joined by ',', its token their count.
call_record the_grouped_command(engine& e) {
  for (auto& c : e.store->calls())
    if (c.what == op::write_grouped) return c;
  BOOST_FAIL("no grouped command was sent");
  return call_record{op::write_grouped};
}

// The documents of the grouped takes (all but the two that went alone) are free again: given back.
bool grouped_ones_given_back(engine& e) {
  return run_until(e, [&] {
    int free = 0;
    for (int i = 0; i < n; ++i) free += e.store->get(name_of(i)).held.owner.empty();
    return free == grouped;
  }, 3s);
}

// Once the tries have read (the reads are answered at once; the grouped takes wait behind the two
// hanging ones), g3 and g6 move on: another holder takes them.
void move_two_on_after_the_reads(engine& e) {
  e.run_for(30ms);
  BOOST_REQUIRE(e.store->count(op::write_grouped) == 0u);
  auto taken = held_by_a_silent_holder(1000ms);
  taken.renewed_at_ms = ml::detail::wall_ms();
  taken.held.token = 6;
  e.store->put(name_of(3), taken);
  e.store->put(name_of(6), taken);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(group_commit_suite)

BOOST_AUTO_TEST_CASE(takes_ready_together_share_one_command) {
  engine e;
  plant_free(e);
  hold_two_in_flight(e, op::take);
  auto ws = try_all(e);
  BOOST_REQUIRE(run_until(e, [&] { return all_done(ws); }, 3s));
  for (int i = 0; i < n; ++i) {
    BOOST_TEST(!ws[i]->ec, name_of(i) << ": " << ws[i]->ec.message());
    BOOST_TEST(ws[i]->held.held());
    BOOST_TEST(e.store->get(name_of(i)).held.owner == ml::detail::access::state(ws[i]->held)->owner);
  }
  BOOST_TEST(e.store->count(op::take) == 2u);
  BOOST_TEST(e.store->count(op::write_grouped) == 1u);
  BOOST_TEST(the_grouped_command(e).token == grouped);
  BOOST_TEST(e.store->grouped_reads() == 0u);  // every statement matched: no read
  // stats::server_calls counts commands, as the store saw them (a grouped one once).
  BOOST_TEST(e.p->snapshot().server_calls == e.store->calls().size());
}

BOOST_AUTO_TEST_CASE(a_lone_take_goes_out_at_once_as_its_own_command) {
  engine e;
  plant_free(e);
  auto [ec, l] = e.acquire(name_of(0), std::nullopt);
  BOOST_TEST(!ec);
  BOOST_TEST(e.store->count(op::take) == 1u);
  BOOST_TEST(e.store->count(op::write_grouped) == 0u);
}

BOOST_AUTO_TEST_CASE(releases_ready_together_share_one_command) {
  engine e;
  plant_free(e);
  std::vector<ml::lease> held;
  for (int i = 0; i < n; ++i) {
    auto [ec, l] = e.acquire(name_of(i), std::nullopt);
    BOOST_REQUIRE(!ec);
    held.push_back(std::move(l));
  }
  hold_in_flight(e, op::release, 60ms, 4);
  std::vector<std::future<error_code>> done;
  for (auto& l : held) done.push_back(engine::ec_future([&](auto h) { l.async_release(h); }));
  for (auto& f : done) {
    BOOST_REQUIRE(e.wait(f, 3s));
    BOOST_TEST(!f.get());
  }
  for (int i = 0; i < n; ++i) BOOST_TEST(e.store->get(name_of(i)).held.owner.empty());
  BOOST_TEST(e.store->count(op::release) == 4u);
  BOOST_TEST(e.store->count(op::write_grouped) == 1u);
  BOOST_TEST(the_grouped_command(e).token == n - 4);
}

// A writeConcernError on the grouped command: every statement may have applied and a failover may
// roll any of them back, so none is granted and each is given back (section 4), as for one take.
BOOST_AUTO_TEST_CASE(a_write_concern_error_grants_none_of_the_grouped_takes) {
  engine e;
  plant_free(e);
  hold_two_in_flight(e, op::take);
  e.store->inject(op::write_grouped, fault(fault::kind::write_concern_error));
  auto ws = try_all(e);
  BOOST_REQUIRE(run_until(e, [&] { return all_done(ws); }, 3s));
  int granted = 0;
  for (int i = 0; i < n; ++i) {
    if (ws[i]->held.held()) {
      ++granted;
      continue;
    }
    BOOST_TEST((ws[i]->ec == ml::errc::ambiguous_result), name_of(i) << ": " << ws[i]->ec.message());
  }
  BOOST_TEST(granted == 2);  // the two that went alone
  BOOST_TEST(grouped_ones_given_back(e));
}

// The grouped command's reply is lost after it applied: every statement is ambiguous, and each
// take asks the server (a majority read), which shows it was ours in time: granted.
BOOST_AUTO_TEST_CASE(a_lost_reply_leaves_each_grouped_take_to_its_majority_recheck) {
  engine e;
  plant_free(e);
  hold_two_in_flight(e, op::take);
  e.store->inject(op::write_grouped, fault(fault::kind::stream_error_after));
  const auto reads_before = e.store->count(op::read);
  auto ws = try_all(e);
  BOOST_REQUIRE(run_until(e, [&] { return all_done(ws); }, 3s));
  for (int i = 0; i < n; ++i) BOOST_TEST(ws[i]->held.held(), name_of(i) << ": " << ws[i]->ec.message());
  // A re-check each, and no look before: the takes are blind (docs/design.md section 1).
  BOOST_TEST(e.store->count(op::read) - reads_before == static_cast<std::size_t>(grouped));
}

// Two documents change between their acquires' reads and the grouped command: those two
// statements miss, the matched count is short, and the read after the command tells exactly which
// applied. The two are not granted; the others are; the two documents stay as the other holder
// wrote them.
BOOST_AUTO_TEST_CASE(a_partial_match_grants_exactly_the_statements_that_applied) {
  engine e;
  plant_free(e);
  hold_two_in_flight(e, op::take, 100ms);
  auto ws = try_all(e);
  move_two_on_after_the_reads(e);
  BOOST_REQUIRE(run_until(e, [&] { return all_done(ws); }, 3s));
  BOOST_TEST(e.store->grouped_reads() >= 1u);
  for (int i = 0; i < n; ++i) {
    const bool moved = i == 3 || i == 6;
    BOOST_TEST(ws[i]->held.held() == !moved, name_of(i) << ": " << ws[i]->ec.message());
    BOOST_TEST(e.store->get(name_of(i)).held.owner == (moved ? std::string("other") : ml::detail::access::state(ws[i]->held)->owner));
  }
}

// The grouped command answers after the takes' bound (sent + E - m): late for every statement,
// so none is granted, and each take that landed is given back.
BOOST_AUTO_TEST_CASE(a_late_grouped_reply_is_late_for_every_take) {
  engine e;  // E = 1000 ms, m = 100 ms: bound 900 ms after each take was sent
  plant_free(e);
  hold_two_in_flight(e, op::take);
  e.store->inject(op::write_grouped, fault(fault::kind::hang, 1200ms));
  auto ws = try_all(e);
  BOOST_REQUIRE(run_until(e, [&] { return all_done(ws); }, 4s));
  int granted = 0;
  for (int i = 0; i < n; ++i) granted += ws[i]->held.held();
  BOOST_TEST(granted == 2);
  BOOST_TEST(grouped_ones_given_back(e));
}

// The read after a short count comes from a node whose majority snapshot predates the command
// (a new primary): the four takes that applied still read as the free documents they were written
// against. Unknown, not missed: each goes to its own majority re-check, which shows it ours in
// time (granted). Judged missed, they would be neither granted nor given back.
BOOST_AUTO_TEST_CASE(a_read_predating_the_command_leaves_each_take_it_cannot_judge_to_its_recheck) {
  engine e;
  plant_free(e);
  hold_two_in_flight(e, op::take, 100ms);
  e.store->inject(op::write_grouped, fault(fault::kind::stale_read));
  auto ws = try_all(e);
  move_two_on_after_the_reads(e);
  const auto reads_before = e.store->count(op::read);
  BOOST_REQUIRE(run_until(e, [&] { return all_done(ws); }, 3s));
  for (int i = 0; i < n; ++i) {
    const bool moved = i == 3 || i == 6;
    BOOST_TEST(ws[i]->held.held() == !moved, name_of(i) << ": " << ws[i]->ec.message());
  }
  // A re-check each for the four, a read after the lost race for the two.
  BOOST_TEST(e.store->count(op::read) - reads_before == static_cast<std::size_t>(grouped));
}

// A statement is applied only on its own write. The document already names the take's owner id and
// token, written by another statement (an earlier take of the same acquire, or a releaser handing
// the lock over from the line): the take misses, and the read must not credit it, or the lease
// clock would start at this take's send instead of the earlier write's (sections 4 and 7).
BOOST_AUTO_TEST_CASE(a_document_naming_our_owner_and_token_by_another_write_is_not_our_statement) {
  engine e;
  auto ours = free_doc(6);
  ours.held.owner = "O";
  ours.held.beat = 424242;
  e.store->put("a", ours);
  e.store->put("b", free_doc(9));
  ml::detail::take_request t;
  t.name = "a";
  t.owner = "O";
  t.token = 6;
  t.expiry = 1000ms;
  t.observed = free_doc(5);
  ml::detail::take_request u = t;
  u.name = "b";
  u.owner = "U";
  u.observed = free_doc(5);  // stale: b is at 9, so this one misses too
  std::promise<outcome<std::vector<ml::detail::grouped_outcome>>> got;
  auto f = got.get_future();
  e.store->write_grouped({{ml::detail::grouped_write::kind::take, t, {}, 0, {}}, {ml::detail::grouped_write::kind::take, u, {}, 0, {}}},
                         [&](auto r) { got.set_value(std::move(r)); });
  BOOST_REQUIRE(e.wait(f, 1s));
  const auto r = f.get();
  BOOST_REQUIRE(!r.ec);
  BOOST_TEST((r.value.at(0) == ml::detail::grouped_outcome::unknown));
  BOOST_TEST((r.value.at(1) == ml::detail::grouped_outcome::missed));
}

// Two takes hang past every take's bound (E - m = 900 ms), holding both places in flight. The six
// takes queued behind them pass their bound in the queue and are never sent (a late take would sit
// under an owner id nobody renews until its give-back); each try takes again with a later bound,
// and those go out once the hang is over.
BOOST_AUTO_TEST_CASE(a_take_whose_bound_passes_in_the_queue_is_never_sent) {
  engine e;
  plant_free(e);
  hold_two_in_flight(e, op::take, 1100ms);
  auto ws = try_all(e);
  BOOST_REQUIRE(run_until(e, [&] { return all_done(ws); }, 4s));
  BOOST_TEST(e.store->late_takes() == 0u);
  BOOST_TEST(e.store->count(op::write_grouped) >= 1u);
}

BOOST_AUTO_TEST_SUITE_END()
