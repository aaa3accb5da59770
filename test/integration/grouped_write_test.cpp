// The grouped command on the real driver and the test server (docs/design.md section 14): one
// unordered update of many statements, its matched count, and the read that tells which applied
// when the count is short. Below the engine, so that each statement's outcome is seen as the
// store reports it.
#include <mongoc/mongoc.h>

#include <optional>

#include "fixture.hpp"
#include "store/mongo_commands.hpp"

namespace {

namespace md = mongolock::detail;
using test::server_uri;
using test::unique;

struct raw_client {
  mongoc_client_t* c = nullptr;
  raw_client() {
    bson_error_t err;
    mongoc_uri_t* uri = mongoc_uri_new_with_error(server_uri().c_str(), &err);
    BOOST_REQUIRE_MESSAGE(uri, err.message);
    c = mongoc_client_new_from_uri(uri);
    mongoc_uri_destroy(uri);
  }
  ~raw_client() { mongoc_client_destroy(c); }
};

md::take_request take_of(const std::string& name, const std::string& owner, const md::lock_doc& seen) {
  md::take_request t;
  t.name = name;
  t.owner = owner;
  t.token = seen.exists ? seen.held.token + 1 : 5;
  t.expiry = std::chrono::milliseconds{30000};
  t.observed = seen;
  return t;
}

constexpr auto applied = md::grouped_outcome::applied;
constexpr auto missed = md::grouped_outcome::missed;
constexpr auto unknown = md::grouped_outcome::unknown;

md::grouped_write grouped_take(md::take_request t) { return {md::grouped_write::kind::take, std::move(t), {}, 0, {}}; }
md::grouped_write grouped_release(const std::string& name, const std::string& owner, std::int64_t token) {
  return {md::grouped_write::kind::release, {}, md::held_lease{name, owner, token}, 0, {}};
}
md::grouped_write grouped_join(const std::string& name, const std::string& owner, std::int64_t ticket) {
  return {md::grouped_write::kind::join, {}, {}, 0, md::line_write{name, owner, ticket}};
}
md::grouped_write grouped_leave(const std::string& name, const std::string& owner) {
  return {md::grouped_write::kind::leave, {}, {}, 0, md::line_write{name, owner, 0}};
}

}  // namespace

BOOST_TEST_DONT_PRINT_LOG_VALUE(mongolock::detail::grouped_outcome)

BOOST_AUTO_TEST_SUITE(acquire)

BOOST_AUTO_TEST_CASE(a_grouped_command_reports_each_statement_as_the_server_applied_it) {
  raw_client db;
  md::store_config cfg{"mongolock_test", unique("grouped"), mongolock::write_concern::majority,
                       std::chrono::milliseconds{10000}, std::chrono::seconds{86400}, {}};
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    names.push_back("n" + std::to_string(i));
    auto r = md::take(db.c, cfg, take_of(names.back(), "first", {}));  // inserts, token 5
    BOOST_REQUIRE(!r.ec && r.value);
    BOOST_REQUIRE(md::release(db.c, cfg, names.back(), "first", 5).value);
  }
  auto seen = [&](int i) { return md::read_lock(db.c, cfg, names[i], md::read_mode::majority).value; };

  // Four takes of four free documents: all matched, all applied.
  std::vector<md::grouped_write> takes;
  for (int i = 0; i < 4; ++i) takes.push_back(grouped_take(take_of(names[i], "A" + std::to_string(i), seen(i))));
  auto r = md::write_grouped(db.c, cfg, takes);
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == std::vector<md::grouped_outcome>(4, applied), boost::test_tools::per_element());
  for (int i = 0; i < 4; ++i) BOOST_TEST(seen(i).held.owner == "A" + std::to_string(i));

  // n2 moves on (its holder released it and someone else took it): its release misses, and the
  // read after the short count says exactly that one did not apply.
  BOOST_REQUIRE(md::release(db.c, cfg, names[2], "A2", 6).value);
  BOOST_REQUIRE(md::take(db.c, cfg, take_of(names[2], "B", seen(2))).value);
  std::vector<md::grouped_write> releases;
  for (int i = 0; i < 4; ++i) releases.push_back(grouped_release(names[i], "A" + std::to_string(i), 6));
  r = md::write_grouped(db.c, cfg, releases);
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == (std::vector<md::grouped_outcome>{applied, applied, missed, applied}),
             boost::test_tools::per_element());
  BOOST_TEST(seen(2).held.owner == "B");
  for (int i : {0, 1, 3}) BOOST_TEST(seen(i).held.owner.empty());

  // Takes against what was seen, one of them stale (n1 was taken after it was read).
  std::vector<md::lock_doc> before{seen(0), seen(1), seen(3)};
  BOOST_REQUIRE(md::take(db.c, cfg, take_of(names[1], "C", before[1])).value);
  takes = {grouped_take(take_of(names[0], "D0", before[0])), grouped_take(take_of(names[1], "D1", before[1])),
           grouped_take(take_of(names[3], "D3", before[2]))};
  r = md::write_grouped(db.c, cfg, takes);
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == (std::vector<md::grouped_outcome>{applied, missed, applied}), boost::test_tools::per_element());
  BOOST_TEST(seen(1).held.owner == "C");
  BOOST_TEST(seen(0).held.owner == "D0");
  BOOST_TEST(seen(0).held.token == 7);

  // The same take again: it misses, yet the document names its owner id and token (the first
  // one's write, as an earlier take of the same acquire or a hand-off from the line would). Only
  // the statement's own beat makes a write its own: unknown, never applied.
  takes = {grouped_take(take_of(names[0], "D0", before[0])), grouped_release(names[1], "C", 7)};
  r = md::write_grouped(db.c, cfg, takes);
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == (std::vector<md::grouped_outcome>{unknown, applied}), boost::test_tools::per_element());
}

// Joins and leaves of lines as statements of one command (docs/design.md sections 7 and 14): the
// filters and changes of the single commands, the matched count, and after a short count a join
// judged by the read only as far as it can tell (never applied; missed once the ticket moved on
// without us) and a leave not at all.
BOOST_AUTO_TEST_CASE(grouped_line_writes_report_what_the_server_can_tell) {
  raw_client db;
  // Line entries are keyed by owner ids, 32 hex digits (anything else is not read as an entry).
  const std::string A(32, 'a'), B(32, 'b'), C(32, 'c'), H(32, 'd');
  md::store_config cfg{"mongolock_test", unique("grouped_line"), mongolock::write_concern::majority,
                       std::chrono::milliseconds{10000}, std::chrono::seconds{86400}, {}};
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i) {
    names.push_back("l" + std::to_string(i));
    auto r = md::take(db.c, cfg, take_of(names.back(), H, {}));  // held by H: a line forms
    BOOST_REQUIRE(!r.ec && r.value);
  }
  auto seen = [&](int i) { return md::read_lock(db.c, cfg, names[i], md::read_mode::majority).value; };
  auto entry = [&](int i, const std::string& owner) -> std::optional<std::int64_t> {
    for (auto& e : seen(i).line)
      if (e.owner == owner) return e.ticket;
    return std::nullopt;
  };

  // Three joins with the tickets the documents show: all matched, all applied.
  std::vector<md::grouped_write> joins;
  for (int i = 0; i < 3; ++i) joins.push_back(grouped_join(names[i], A, seen(i).tickets));
  auto r = md::write_grouped(db.c, cfg, joins);
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == std::vector<md::grouped_outcome>(3, applied), boost::test_tools::per_element());
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST((entry(i, A) == std::optional<std::int64_t>(0)));
    BOOST_TEST(seen(i).tickets == 1);
    BOOST_TEST(seen(i).waiting == 1);
  }

  // B joins l1 first; then B's joins of l0 and l2 race a stale ticket on l1: l0 and l2 apply (an
  // entry of B's is there, which the read cannot credit to this statement: unknown), l1 missed.
  BOOST_REQUIRE((md::write_grouped(db.c, cfg, {grouped_join(names[1], C, 1)}).value ==
                 std::vector<md::grouped_outcome>{applied}));
  r = md::write_grouped(db.c, cfg, {grouped_join(names[0], B, 1), grouped_join(names[1], B, 1),
                                     grouped_join(names[2], B, 1)});
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == (std::vector<md::grouped_outcome>{unknown, missed, unknown}), boost::test_tools::per_element());
  BOOST_TEST((entry(0, B) == std::optional<std::int64_t>(1)));
  BOOST_TEST(!entry(1, B));

  // Leaves: all there, all applied; one of them gone, a short count, and every leave unknown.
  r = md::write_grouped(db.c, cfg, {grouped_leave(names[0], A), grouped_leave(names[1], A)});
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == std::vector<md::grouped_outcome>(2, applied), boost::test_tools::per_element());
  BOOST_TEST(!entry(0, A));
  BOOST_TEST(seen(0).waiting == 1);
  r = md::write_grouped(db.c, cfg, {grouped_leave(names[0], A), grouped_leave(names[2], A)});
  BOOST_REQUIRE_MESSAGE(!r.ec, r.message);
  BOOST_TEST(r.value == std::vector<md::grouped_outcome>(2, unknown), boost::test_tools::per_element());
  BOOST_TEST(!entry(2, A), "the one still there left all the same");
}

BOOST_AUTO_TEST_SUITE_END()
