// The first reads of a set's waits as one find (src/engine/read_gathering.hpp, docs/design.md
// section 10), on the grouping store over the in-memory store: every read is answered once with
// its own document, and no read waits past the gathering's bound for a name that never reads.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <map>
#include <string>

#include "engine/group_commit.hpp"
#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

using ml::detail::grouping_store;
using ml::detail::lock_doc;
using ml::detail::outcome;
using ml::detail::read_mode;

// Three documents, each with its own token, so an answer shows whose document it carries.
std::shared_ptr<grouping_store> three_documents(engine& e) {
  for (int i = 1; i <= 3; ++i) e.store->put("r" + std::to_string(i), free_doc(10 * i));
  return std::make_shared<grouping_store>(e.store);
}

// The answers by name; a name read twice would fail the test (each read is answered once).
struct read_answers {
  std::map<std::string, outcome<lock_doc>> got;
  int calls = 0;
};

void gathered_read(grouping_store& g, const std::string& name, const std::shared_ptr<read_answers>& a,
          read_mode m = read_mode::majority) {
  g.read(name, m, [a, name](outcome<lock_doc> r) {
    ++a->calls;
    a->got.emplace(name, std::move(r));
  });
}

std::size_t calls_of(engine& e, op o) { return calls_since(e, 0, o).size(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(read_gathering_suite)

BOOST_AUTO_TEST_CASE(the_first_reads_of_every_name_go_in_one_find) {
  engine e;
  auto g = three_documents(e);
  auto handle = g->gather_reads(e.io.get_executor(), {"r1", "r2", "r3"}, 1s);
  auto a = std::make_shared<read_answers>();
  gathered_read(*g, "r2", a);
  gathered_read(*g, "r1", a);
  e.run_for(20ms);
  BOOST_TEST(a->calls == 0, "held until the third name reads");
  gathered_read(*g, "r3", a);
  e.run_for(20ms);
  BOOST_TEST_REQUIRE(a->calls == 3);
  for (int i = 1; i <= 3; ++i) {
    const auto& r = a->got.at("r" + std::to_string(i));
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.value.held.token == 10 * i, "its own document");
  }
  BOOST_TEST(calls_of(e, op::read_each) == 1u);
  BOOST_TEST(calls_of(e, op::read) == 0u);
  BOOST_TEST(g->saved() == 2u, "three reads in one command: two saved (stats::server_calls)");
  // A second read of a name goes alone: only the first reads are gathered.
  gathered_read(*g, "r1", a);
  e.run_for(20ms);
  BOOST_TEST(calls_of(e, op::read) == 1u);
}

BOOST_AUTO_TEST_CASE(a_name_that_never_reads_holds_the_others_only_until_the_bound) {
  engine e;
  auto g = three_documents(e);
  auto handle = g->gather_reads(e.io.get_executor(), {"r1", "r2", "r3"}, 50ms);
  auto a = std::make_shared<read_answers>();
  e.run_for(100ms);  // the bound counts from the first read held, not from the opening
  gathered_read(*g, "r1", a);
  gathered_read(*g, "r2", a);
  e.run_for(25ms);
  BOOST_TEST(a->calls == 0);
  e.run_for(100ms);
  BOOST_TEST(a->calls == 2, "sent at the bound without r3");
  BOOST_TEST(calls_of(e, op::read_each) == 1u);
}

BOOST_AUTO_TEST_CASE(a_name_heard_from_or_the_handle_dropped_sends_what_is_held) {
  engine e;
  auto g = three_documents(e);
  auto a = std::make_shared<read_answers>();
  {
    auto handle = g->gather_reads(e.io.get_executor(), {"r1", "r2", "r3"}, 1s);
    gathered_read(*g, "r1", a);
    gathered_read(*g, "r2", a);
    g->heard_from("r3");  // its acquire ended, parked or wrote first: it will not read now
    e.run_for(20ms);
    BOOST_TEST(a->calls == 2);
  }
  {
    auto handle = g->gather_reads(e.io.get_executor(), {"r1", "r2", "r3"}, 1s);
    gathered_read(*g, "r3", a);
    handle.reset();
    e.run_for(20ms);
    BOOST_TEST(a->calls == 3, "the handle dropped");
    BOOST_TEST(calls_of(e, op::read) == 1u, "a lone read goes as a read");
  }
}

BOOST_AUTO_TEST_CASE(a_read_not_at_majority_or_outside_a_gathering_goes_alone_at_once) {
  engine e;
  auto g = three_documents(e);
  auto handle = g->gather_reads(e.io.get_executor(), {"r1", "r2"}, 1s);
  auto a = std::make_shared<read_answers>();
  gathered_read(*g, "r1", a, read_mode::primary);
  gathered_read(*g, "r3", a);
  e.run_for(20ms);
  BOOST_TEST(a->calls == 2);
  BOOST_TEST(calls_of(e, op::read) == 2u);
  // A gathering of one name has nothing to put together.
  BOOST_TEST(!g->gather_reads(e.io.get_executor(), {"r3"}, 1s));
}

BOOST_AUTO_TEST_CASE(a_failed_find_fails_every_read_it_held) {
  engine e;
  auto g = three_documents(e);
  e.store->inject(op::read_each, fault(fault::kind::unavailable));
  auto handle = g->gather_reads(e.io.get_executor(), {"r1", "r2"}, 1s);
  auto a = std::make_shared<read_answers>();
  gathered_read(*g, "r1", a);
  gathered_read(*g, "r2", a);
  e.run_for(20ms);
  BOOST_TEST_REQUIRE(a->calls == 2);
  BOOST_TEST(a->got.at("r1").ec);
  BOOST_TEST(a->got.at("r2").ec);
}

// How a find's reply is split among its names (lock_store.hpp's each_of_find, shared with the poll
// group): each its own document; the find's error for each; a reply of the wrong length fails each.
BOOST_AUTO_TEST_CASE(a_finds_reply_is_split_one_outcome_per_name) {
  using ml::detail::each_of_find;
  std::vector<lock_doc> docs{free_doc(10), free_doc(20)};
  auto whole = each_of_find(ml::detail::success(docs), 2);
  BOOST_TEST_REQUIRE(whole.size() == 2u);
  BOOST_TEST(!whole[0].ec);
  BOOST_TEST(whole[1].value.held.token == 20);
  auto failed = each_of_find(ml::detail::failure<std::vector<lock_doc>>(make_error_code(ml::errc::timeout), "late"), 2);
  BOOST_TEST_REQUIRE(failed.size() == 2u);
  BOOST_TEST((failed[1].ec == ml::errc::timeout));
  BOOST_TEST(failed[1].message == "late");
  auto short_reply = each_of_find(ml::detail::success(docs), 3);
  BOOST_TEST_REQUIRE(short_reply.size() == 3u);
  for (const auto& one : short_reply) {
    BOOST_TEST((one.ec == ml::errc::server_unavailable));
    BOOST_TEST(one.message == "the find answered a different number of documents");
  }
}

BOOST_AUTO_TEST_SUITE_END()
