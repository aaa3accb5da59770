// Group commit of line writes (docs/design.md sections 7 and 14): the joins and leaves of one
// provider that are ready while two of their kind are in flight share one command, as a semaphore's
// wait on every permit makes them. Each keeps its own outcome: a join is judged by the read after a
// short count only as far as that read can tell, and a leave not at all. On the in-memory store.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <string>
#include <vector>

#include "engine/group_commit.hpp"
#include "engine_harness.hpp"
#include "fsm_params.hpp"
#include "mongolock/provider.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

using ml::detail::grouped_outcome;
using ml::detail::grouped_write;
using ml::detail::line_write;
using result = std::tuple<error_code, ml::lease>;

constexpr int permits = 8;

ml::semaphore sem(const std::shared_ptr<ml::detail::provider_impl>& p, int n = permits) {
  return ml::detail::access::make_provider(p).create_semaphore("s", n);
}

std::string permit(int k) { return "s#" + std::to_string(k); }

// Every permit of "s", held by another provider (live: it renews).
std::vector<ml::lease> hold_every_permit(engine& e, const std::shared_ptr<ml::detail::provider_impl>& them) {
  auto theirs = sem(them);
  std::vector<ml::lease> held;
  for (int i = 0; i < permits; ++i) {
    auto done = std::make_shared<std::promise<result>>();
    auto f = done->get_future();
    ml::diagnostics d;
    theirs.async_try_acquire(d, [done](error_code ec, ml::lease l) { done->set_value({ec, std::move(l)}); });
    BOOST_REQUIRE(e.wait(f, 5s));
    auto [ec, l] = f.get();
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    held.push_back(std::move(l));
  }
  return held;
}

// The first two calls of `o` hang for `d`: the commands of that kind in flight are at their limit
// (two: group_commit.hpp), so what comes meanwhile queues and goes as one command.
void hold_two_in_flight(engine& e, op o, std::chrono::milliseconds d = 300ms) {
  for (int i = 0; i < 2; ++i) e.store->inject(o, fault(fault::kind::hang, d));
}

// What each of `got` was answered, once all have been (2 s each at most).
std::vector<outcome<bool>> answers(engine& e, std::vector<std::promise<outcome<bool>>>& got) {
  std::vector<std::future<outcome<bool>>> fs;
  for (auto& p : got) fs.push_back(p.get_future());
  for (auto& f : fs) BOOST_REQUIRE(e.wait(f, 2s));
  std::vector<outcome<bool>> r;
  for (auto& f : fs) r.push_back(f.get());
  return r;
}

// The grouped commands of one kind ("join", "leave") since call number `from`.
std::vector<call_record> grouped_since(engine& e, std::size_t from, const std::string& kind) {
  std::vector<call_record> out;
  for (auto& c : calls_since(e, from, op::write_grouped))
    if (c.owner == kind) out.push_back(c);
  return out;
}

std::size_t statements(const std::vector<call_record>& grouped) {
  std::size_t n = 0;
  for (auto& c : grouped) n += static_cast<std::size_t>(c.token);
  return n;
}

bool in_line(const lock_doc& d, const std::string& owner) {
  for (auto& e : d.line)
    if (e.owner == owner) return true;
  return false;
}

// A semaphore wait of ours on every permit (all held by `them`), run until each permit's line
// has our entry; the call count before it started.
struct waiting_on_all {
  std::shared_ptr<ml::detail::provider_impl> them;
  std::vector<ml::lease> theirs;
  std::future<result> ours;
  std::size_t before = 0;
  asio::cancellation_signal cancel;  // bound to ours
};
void wait_on_every_permit(engine& e, waiting_on_all& w) {
  w.them = other_provider(e);
  w.theirs = hold_every_permit(e, w.them);
  hold_two_in_flight(e, op::join_line);
  w.before = e.store->calls().size();
  auto done = std::make_shared<std::promise<result>>();
  w.ours = done->get_future();
  sem(e.p).async_acquire_for(10s, asio::bind_cancellation_slot(w.cancel.slot(), [done](error_code ec, ml::lease l) {
                                done->set_value({ec, std::move(l)});
                              }));
  BOOST_REQUIRE(run_until(e, [&] {
    for (int k = 1; k <= permits; ++k)
      if (e.store->get(permit(k)).line.size() != 1) return false;
    return true;
  }, 5s));
}

// A grouped command straight on the store (no engine in between), to completion.
outcome<std::vector<grouped_outcome>> write_grouped(engine& e, const std::vector<grouped_write>& w) {
  std::promise<outcome<std::vector<grouped_outcome>>> got;
  auto f = got.get_future();
  e.store->write_grouped(w, [&](auto r) { got.set_value(std::move(r)); });
  BOOST_REQUIRE(e.wait(f, 1s));
  return f.get();
}
grouped_write join(std::string name, std::string owner, std::int64_t ticket) {
  return {grouped_write::kind::join, {}, {}, 0, line_write{std::move(name), std::move(owner), ticket}};
}
grouped_write leave(std::string name, std::string owner) {
  return {grouped_write::kind::leave, {}, {}, 0, line_write{std::move(name), std::move(owner), 0}};
}

// Held by "H" (token 5) with `line`, next ticket `tickets`.
lock_doc held_with_line(std::vector<ml::detail::line_entry> line, std::int64_t tickets) {
  return line_doc("H", std::move(line), tickets);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(line_group_suite)

// Eight permits held elsewhere: the wait joins eight lines. Two joins go alone (held in flight
// here), the six that come meanwhile go as one command; before, each was its own (eight).
BOOST_AUTO_TEST_CASE(a_semaphore_wait_joins_the_lines_of_its_permits_in_one_command) {
  engine e;
  waiting_on_all w;
  wait_on_every_permit(e, w);
  const auto joins = calls_since(e, w.before, op::join_line);
  const auto grouped = grouped_since(e, w.before, "join");
  BOOST_TEST(joins.size() == 2u);
  BOOST_TEST(grouped.size() == 1u);
  BOOST_TEST(statements(grouped) == static_cast<std::size_t>(permits - 2));
  for (int k = 1; k <= permits; ++k) {
    const auto d = e.store->get(permit(k));
    BOOST_TEST(d.waiting == 1, permit(k));
    BOOST_TEST(d.tickets == 1, permit(k));
  }
  // The wait ends before the engine does (a coroutine left suspended would outlive it).
  w.cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(w.ours, 5s));
  BOOST_TEST(run_until(e, [&] {
    for (int k = 1; k <= permits; ++k)
      if (!e.store->get(permit(k)).line.empty()) return false;
    return true;
  }, 3s));
}

// One permit comes free: the wait on it takes it (its take removes its own entry), the seven
// other waits end and leave their lines. Two leaves go alone, the five that come meanwhile as one
// command (before: seven); every line is empty afterwards, and the caller holds exactly one permit.
BOOST_AUTO_TEST_CASE(the_waits_that_lose_leave_their_lines_in_one_command) {
  engine e;
  waiting_on_all w;
  wait_on_every_permit(e, w);
  hold_two_in_flight(e, op::leave_line);
  const auto before = e.store->calls().size();
  BOOST_REQUIRE(!e.release(w.theirs[3]));
  BOOST_REQUIRE(e.wait(w.ours, 5s));
  auto [ec, got] = w.ours.get();
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST(got.name() == w.theirs[3].name());
  BOOST_REQUIRE(run_until(e, [&] {
    for (int k = 1; k <= permits; ++k)
      if (!e.store->get(permit(k)).line.empty()) return false;
    return true;
  }, 5s));
  const auto leaves = calls_since(e, before, op::leave_line);
  const auto grouped = grouped_since(e, before, "leave");
  BOOST_TEST(leaves.size() == 2u);
  BOOST_TEST(grouped.size() == 1u);
  BOOST_TEST(statements(grouped) == static_cast<std::size_t>(permits - 3));
  for (int k = 1; k <= permits; ++k) BOOST_TEST(e.store->get(permit(k)).waiting == 0, permit(k));
  BOOST_TEST(calls_since(e, before, op::release_owners).empty(), "every leave applied: no fallback");
}

// A wait cancelled while its joins are on their way: two in flight (slow to arrive: they land
// 300 ms later) and the rest queued behind them. The queued ones are never sent, and the leaves of
// the two wait for their replies, so that no join lands after its leave: every line is empty in
// the end. Before, the queued joins went after the leaves and the slow ones landed after theirs,
// each an entry nobody uses (a head that never comes: a window lost by every waiter behind it).
BOOST_AUTO_TEST_CASE(a_leave_never_overtakes_the_join_of_its_entry) {
  engine e;
  auto them = other_provider(e);
  auto theirs = hold_every_permit(e, them);
  for (int i = 0; i < 2; ++i) e.store->inject(op::join_line, fault(fault::kind::slow_request, 300ms));
  const auto before = e.store->calls().size();
  asio::cancellation_signal cancel;
  auto done = std::make_shared<std::promise<result>>();
  auto ours = done->get_future();
  sem(e.p).async_acquire_for(10s, asio::bind_cancellation_slot(cancel.slot(), [done](error_code ec, ml::lease l) {
                                done->set_value({ec, std::move(l)});
                              }));
  // Every wait read (after the first look's try of one permit, its read and one find of all
  // permits, the waits' first reads in one more find): the six other joins are queued.
  BOOST_REQUIRE(run_until(e, [&] {
    return calls_since(e, before, op::join_line).size() == 2u && calls_since(e, before, op::read_each).size() >= 2u;
  }, 5s));
  e.run_for(50ms);
  cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(ours, 5s));
  BOOST_TEST((std::get<0>(ours.get()) == asio::error::operation_aborted));
  e.run_for(600ms);  // past the slow joins' arrival
  BOOST_TEST(run_until(e, [&] {
    for (int k = 1; k <= permits; ++k)
      if (!e.store->get(permit(k)).line.empty()) return false;
    return true;
  }, 3s));
  for (int k = 1; k <= permits; ++k) BOOST_TEST(e.store->get(permit(k)).waiting == 0, permit(k));
  BOOST_TEST(grouped_since(e, before, "join").empty(), "the queued joins were never sent");
}

// The wait gives up (cancelled) after every entry of ours went (here: removed by hand), and one
// permit was handed to our entry meanwhile: each of the eight leaves finds no entry, and each
// acquire must free whatever names its owner id (docs/design.md section 7, point 8). Those
// fallbacks come together (the grouped leaves are answered together) and go as few commands;
// before, one each (eight). The handed permit is freed.
BOOST_AUTO_TEST_CASE(the_fallbacks_of_leaves_that_found_no_entry_go_together) {
  engine e;
  waiting_on_all w;
  wait_on_every_permit(e, w);
  std::vector<std::string> ours;
  for (int k = 1; k <= permits; ++k) ours.push_back(e.store->get(permit(k)).line.at(0).owner);
  // In one turn, before our waits read again: every entry gone, permit 1 handed to ours, cancel.
  for (int k = 1; k <= permits; ++k) {
    auto d = e.store->get(permit(k));
    d.line.clear();
    d.waiting = 0;
    if (k == 1) {
      d.held.owner = ours[0];
      d.held.token += 1;
    }
    e.store->put(permit(k), d);
  }
  hold_two_in_flight(e, op::leave_line);  // the other six leaves go as one command
  const auto before = e.store->calls().size();
  w.cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(w.ours, 5s));
  BOOST_TEST((std::get<0>(w.ours.get()) == asio::error::operation_aborted));
  BOOST_REQUIRE(run_until(e, [&] { return e.store->get(permit(1)).held.owner.empty(); }, 3s));
  e.run_for(100ms);
  const auto fallbacks = calls_since(e, before, op::release_owners);
  std::size_t owners = 0;
  for (auto& c : fallbacks) owners += static_cast<std::size_t>(c.token);
  BOOST_TEST(owners == static_cast<std::size_t>(permits), "every acquire's owner id is freed");
  BOOST_TEST_MESSAGE(fallbacks.size() << " commands for " << permits << " fallbacks");
  BOOST_TEST(fallbacks.size() <= 3u, fallbacks.size() << " commands for " << permits << " fallbacks");
}

// After a short count, a join is judged only as far as the read can tell: never applied (an
// entry of ours may be an earlier join's), unknown while anything names our owner id, the next
// ticket is still the join's or the document is missing; missed when the ticket moved on without us.
BOOST_AUTO_TEST_CASE(a_grouped_join_is_judged_only_as_far_as_the_read_can_tell) {
  engine e;
  e.store->put("a", held_with_line({}, 7));            // our join at 7 applies
  e.store->put("b", held_with_line({{"X", 8}}, 9));    // X joined with 8 first
  auto handed = held_with_line({}, 4);                  // handed to O from the line already
  handed.held.owner = "O";
  e.store->put("c", handed);
  // "gone" does not exist: the join misses, and a missing document could be a read that predates
  // its insert.
  const auto r = write_grouped(e, {join("a", "O", 7), join("b", "O", 8), join("c", "O", 3), join("gone", "O", 0)});
  BOOST_REQUIRE(!r.ec);
  BOOST_TEST((r.value == std::vector<grouped_outcome>{grouped_outcome::unknown, grouped_outcome::missed,
                                                       grouped_outcome::unknown, grouped_outcome::unknown}));
  BOOST_TEST(in_line(e.store->get("a"), "O"));
  BOOST_TEST(!in_line(e.store->get("b"), "O"));

  // A read that predates the command shows d as the join was written against: unknown, though it
  // applied. f's join raced (its ticket had moved on before the command): missed all the same.
  e.store->put("d", held_with_line({}, 2));
  e.store->put("f", held_with_line({}, 6));
  e.store->inject(op::write_grouped, fault(fault::kind::stale_read));
  const auto stale = write_grouped(e, {join("d", "P", 2), join("f", "P", 5)});
  BOOST_REQUIRE(!stale.ec);
  BOOST_TEST((stale.value == std::vector<grouped_outcome>{grouped_outcome::unknown, grouped_outcome::missed}));
  BOOST_TEST(in_line(e.store->get("d"), "P"));
}

// Leaves are answered applied only by a full count; after a short one each is unknown, without a
// read (an entry gone says nothing), so the caller does what it does when a leave did not apply.
BOOST_AUTO_TEST_CASE(grouped_leaves_are_applied_on_a_full_count_and_unknown_otherwise) {
  engine e;
  e.store->put("a", held_with_line({{"O", 1}, {"Q", 2}}, 3));
  e.store->put("b", held_with_line({{"O", 4}}, 5));
  auto r = write_grouped(e, {leave("a", "O"), leave("b", "O")});
  BOOST_REQUIRE(!r.ec);
  BOOST_TEST((r.value == std::vector<grouped_outcome>(2, grouped_outcome::applied)));
  BOOST_TEST(e.store->get("a").waiting == 1);
  BOOST_TEST(!in_line(e.store->get("b"), "O"));

  const auto reads = e.store->grouped_reads();
  r = write_grouped(e, {leave("a", "Q"), leave("b", "O")});  // b's entry is gone: a short count
  BOOST_REQUIRE(!r.ec);
  BOOST_TEST((r.value == std::vector<grouped_outcome>(2, grouped_outcome::unknown)));
  BOOST_TEST(e.store->grouped_reads() == reads, "no read after leaves");
  BOOST_TEST(e.store->get("a").line.empty());
}

// Through the grouping store: a grouped join judged missed is answered "not applied" and marked
// ambiguous (the read may predate the command); one judged unknown as a lost reply; a lone join
// as its own command.
BOOST_AUTO_TEST_CASE(the_grouping_store_answers_each_grouped_join_by_its_judgement) {
  engine e;
  for (auto n : {"a", "b", "c", "d"}) e.store->put(n, held_with_line({}, 7));
  e.store->put("d", held_with_line({{"X", 7}}, 8));  // X joined first
  auto g = std::make_shared<ml::detail::grouping_store>(e.store);
  hold_two_in_flight(e, op::join_line, 100ms);
  std::vector<std::promise<outcome<bool>>> got(4);
  const std::vector<std::string> names{"a", "b", "c", "d"};
  for (std::size_t i = 0; i < 4; ++i) g->join_line(names[i], "O", 7, [&, i](outcome<bool> r) { got[i].set_value(std::move(r)); });
  const auto r = answers(e, got);
  BOOST_TEST(e.store->count(op::join_line) == 2u);
  BOOST_TEST(e.store->count(op::write_grouped) == 1u);
  BOOST_TEST((!r[0].ec && r[0].value && !r[1].ec && r[1].value), "alone: the server's own answer");
  BOOST_TEST(r[2].ec, "applied, but a read cannot credit it: as a lost reply");
  BOOST_TEST(r[2].ambiguous);
  BOOST_TEST((!r[3].ec && !r[3].value && r[3].ambiguous), "missed, as far as a read can tell");
}

// The same for takes: one judged missed by the read after a grouped command is answered "not
// applied" and flagged ambiguous; one that goes alone and matches nothing is the server's own
// answer, not flagged.
BOOST_AUTO_TEST_CASE(the_grouping_store_flags_a_grouped_take_judged_missed) {
  engine e;
  for (auto n : {"a", "b", "c", "d"}) e.store->put(n, free_doc(5));
  e.store->put("b", free_doc(9));
  e.store->put("d", free_doc(9));
  auto g = std::make_shared<ml::detail::grouping_store>(e.store);
  hold_two_in_flight(e, op::take, 100ms);
  std::vector<std::promise<outcome<bool>>> got(4);
  const std::vector<std::string> names{"a", "b", "c", "d"};
  for (std::size_t i = 0; i < 4; ++i) {
    ml::detail::take_request t;
    t.name = names[i];
    t.owner = "O" + names[i];
    t.token = 6;
    t.expiry = 1000ms;
    t.observed = free_doc(5);  // b and d are at 9: those miss
    g->take(t, [&, i](outcome<bool> r) { got[i].set_value(std::move(r)); });
  }
  const auto r = answers(e, got);
  BOOST_TEST(e.store->count(op::take) == 2u);
  BOOST_TEST(e.store->count(op::write_grouped) == 1u);
  BOOST_TEST((!r[1].ec && !r[1].value && !r[1].ambiguous), "alone: the server's own miss");
  BOOST_TEST((!r[3].ec && !r[3].value && r[3].ambiguous), "grouped: missed, as far as a read can tell");
}

// A join judged missed may still have been written: the document was removed and inserted again
// (tickets restart at 0) and the judging read predates the removal, showing a higher ticket. If a
// later join of the same acquire comes back unknown and a releaser then hands the lock to our
// entry, the entry was the first join's: the clock starts at the first join's send, not the later
// one's (docs/design.md section 7, point 2).
BOOST_AUTO_TEST_CASE(a_join_judged_missed_by_a_read_keeps_its_send_for_a_hand_offs_clock) {
  using namespace test::line_world;
  acquire_fsm f("x", test::fsm_params(t0, me));
  f.resume(acquire_input::start(t0));
  auto a = f.resume(acquire_input::read(seen(line_doc(other, {}, 7)), t0));
  BOOST_REQUIRE((a.what == kind::join));
  outcome<bool> judged_missed;
  judged_missed.ambiguous = true;  // value false: "not applied", as far as the read could tell
  a = f.resume(acquire_input::joined(judged_missed, t0 + 10ms, t0 + 20ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::read));
  // A read that does not show our first join (it predates it too): we join again; that reply is lost.
  a = f.resume(acquire_input::read(seen(line_doc(other, {}, 7)), t0 + 50ms));
  BOOST_REQUIRE((a.what == kind::join));
  outcome<bool> lost;
  lost.ec = make_error_code(ml::errc::server_unavailable);
  lost.ambiguous = true;
  a = f.resume(acquire_input::joined(lost, t0 + 60ms, t0 + 70ms));
  BOOST_REQUIRE((a.what == kind::wait_until));
  BOOST_REQUIRE((f.resume(acquire_input::timer(a.at)).what == kind::read));
  // The lock, handed to us from the line: our clock starts at the first join's send.
  auto handed = line_doc(me, {}, 8);
  handed.held.token = 6;
  a = f.resume(acquire_input::read(seen(handed), t0 + 100ms));
  BOOST_REQUIRE((a.what == kind::grant));
  BOOST_TEST((a.at == t0 + 10ms));
}

// A read-judged miss still counts as a lost race: after five, the acquire waits unregistered.
BOOST_AUTO_TEST_CASE(read_judged_misses_count_towards_the_joins_an_acquire_makes) {
  using namespace test::line_world;
  acquire_fsm f("x", test::fsm_params(t0, me));
  f.resume(acquire_input::start(t0));
  auto now = t0;
  outcome<bool> judged_missed;
  judged_missed.ambiguous = true;
  for (int i = 0; i < 5; ++i) {
    auto a = f.resume(acquire_input::read(seen(line_doc(other, {}, 7)), now));
    BOOST_REQUIRE_MESSAGE((a.what == kind::join), "join " << i);
    a = f.resume(acquire_input::joined(judged_missed, now, now + 1ms));
    now = a.at;
    BOOST_REQUIRE((f.resume(acquire_input::timer(now)).what == kind::read));
  }
  BOOST_TEST((f.resume(acquire_input::read(seen(line_doc(other, {}, 7)), now)).what == kind::wait_until));
  BOOST_TEST(!f.joined());
}

BOOST_AUTO_TEST_SUITE_END()
