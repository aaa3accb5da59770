// Fenced writes (docs/design.md section 15): a write whose token is below a document's fence is
// refused and changes nothing; a holder frozen past its lease is refused once the next holder
// has written, where the same update unfenced overwrites the newer holder's write.
#include <mongoc/mongoc.h>

#include <signal.h>

#include "fixture.hpp"
#include "processes.hpp"

using namespace test;
using boost::system::error_code;
namespace ml = mongolock;

namespace {

constexpr const char* db_name = "mongolock_test";

// The test's own view of a collection, straight through libmongoc (not the code under test).
struct raw_collection {
  mongoc_client_t* c = mongoc_client_new(server_uri().c_str());
  mongoc_collection_t* col;
  explicit raw_collection(const std::string& name) : col(mongoc_client_get_collection(c, db_name, name.c_str())) {}
  ~raw_collection() {
    mongoc_collection_destroy(col);
    mongoc_client_destroy(c);
  }
  static bson_t* json(const std::string& text) {
    bson_error_t err;
    bson_t* b = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(text.data()), -1, &err);
    BOOST_REQUIRE_MESSAGE(b, err.message);
    return b;
  }
  void insert(const std::string& doc) {
    bson_t* b = json(doc);
    bson_error_t err;
    BOOST_REQUIRE_MESSAGE(mongoc_collection_insert_one(col, b, nullptr, nullptr, &err), err.message);
    bson_destroy(b);
  }
  std::int64_t count(const std::string& filter = "{}") {
    bson_t* f = json(filter);
    bson_error_t err;
    const auto n = mongoc_collection_count_documents(col, f, nullptr, nullptr, nullptr, &err);
    bson_destroy(f);
    BOOST_REQUIRE_MESSAGE(n >= 0, err.message);
    return n;
  }
  // The document with this _id as relaxed extended JSON ("" when there is none).
  std::string find(const std::string& id) {
    bson_t* f = BCON_NEW("_id", BCON_UTF8(id.c_str()));
    mongoc_cursor_t* cur = mongoc_collection_find_with_opts(col, f, nullptr, nullptr);
    const bson_t* doc = nullptr;
    std::string out;
    if (mongoc_cursor_next(cur, &doc)) {
      char* s = bson_as_relaxed_extended_json(doc, nullptr);
      out = s;
      bson_free(s);
    }
    mongoc_cursor_destroy(cur);
    bson_destroy(f);
    return out;
  }
  std::int64_t fence_of(const std::string& id, const char* field = "fence") {
    bson_t* f = BCON_NEW("_id", BCON_UTF8(id.c_str()));
    mongoc_cursor_t* cur = mongoc_collection_find_with_opts(col, f, nullptr, nullptr);
    const bson_t* doc = nullptr;
    std::int64_t fence = -1;
    bson_iter_t it;
    if (mongoc_cursor_next(cur, &doc) && bson_iter_init_find(&it, doc, field)) fence = bson_iter_as_int64(&it);
    mongoc_cursor_destroy(cur);
    bson_destroy(f);
    return fence;
  }
};

std::string has_value(const std::string& v) { return "\"value\" : \"" + v + "\""; }

struct write_outcome {
  error_code ec;
  ml::fenced_result result;
  std::string reason;
};

// GCC 12 rejects a braced list inside a coroutine ("array used as initializer"): ops are built
// by these plain functions instead.
std::vector<ml::fenced_op> one(ml::fenced_op op) {
  std::vector<ml::fenced_op> ops;
  ops.push_back(std::move(op));
  return ops;
}
ml::fenced_op op(ml::fenced_kind k, const char* filter, const char* change, bool upsert = false) {
  return ml::fenced_op{k, filter, change, upsert};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fence)

BOOST_FIXTURE_TEST_CASE(a_write_below_the_fence_is_refused_and_changes_nothing, io_fixture) {
  const auto coll = unique("fenced");
  const auto name = unique("fence-lock");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "doc", "value": "initial"})");
  auto p = make_provider();
  const ml::fenced_collection where{db_name, coll};
  run([&]() -> asio::awaitable<void> {
    auto older = co_await p.create_lock(name).async_acquire();
    co_await older.async_release();
    auto newer = co_await p.create_lock(name).async_acquire();
    BOOST_REQUIRE(newer.fencing_token() > older.fencing_token());
    // A document without a fence is writable; the write adds the fence.
    auto r = co_await newer.async_fenced_update(where, R"({"_id": "doc"})", R"({"$set": {"value": "newer"}})");
    BOOST_TEST(r.matched == 1);
    BOOST_TEST(raw.fence_of("doc") == newer.fencing_token());
    // The same token again is at most the fence: applied (a holder's second write).
    r = co_await newer.async_fenced_update(where, R"({"_id": "doc"})", R"({"$inc": {"n": 1}})");
    BOOST_TEST(r.matched == 1);
    // The older token: refused, with both tokens in the reason, nothing changed. Sent as a
    // paused holder would: `older`, released here, refuses before sending (fenced_surface.hpp).
    ml::diagnostics d;
    auto [ec, stale] = co_await ml::async_fenced_update(*db, older.fencing_token(), where, R"({"_id": "doc"})",
                                                        R"({"$set": {"value": "older"}})", d,
                                                        asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::fenced_out), ec.message());
    BOOST_TEST(stale.matched == 0);
    BOOST_TEST(stale.refused == std::vector<std::size_t>(1, 0));
    BOOST_TEST(d.reason.find(std::to_string(newer.fencing_token())) != std::string::npos, d.reason);
    BOOST_TEST(d.reason.find(std::to_string(older.fencing_token())) != std::string::npos, d.reason);
    BOOST_TEST(raw.find("doc").find(has_value("newer")) != std::string::npos, raw.find("doc"));
    BOOST_TEST(raw.fence_of("doc") == newer.fencing_token());
    // A filter that matches nothing is not a refusal (as the unfenced update: 0 matched).
    r = co_await newer.async_fenced_update(where, R"({"_id": "none"})", R"({"$set": {"value": "x"}})");
    BOOST_TEST(r.matched == 0);
    co_await newer.async_release();
  }());
}

BOOST_FIXTURE_TEST_CASE(a_refused_upsert_never_inserts_a_second_document, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  const ml::fenced_collection where{db_name, coll};
  run([&]() -> asio::awaitable<void> {
    auto write = [&](std::int64_t token, ml::fenced_op op) -> asio::awaitable<write_outcome> {
      ml::diagnostics d;
      auto t = co_await ml::async_fenced_write(*db, token, where, one(std::move(op)), d,
                                               asio::as_tuple(asio::deferred));
      write_outcome out{std::get<0>(t), std::move(std::get<1>(t)), d.reason};
      co_return out;
    };
    auto w = co_await write(20, op(ml::fenced_kind::update, R"({"_id": "u"})", R"({"$set": {"value": "v20"}})", true));
    BOOST_TEST(!w.ec, w.reason);
    BOOST_TEST(w.result.upserted == 1);
    BOOST_TEST(raw.fence_of("u") == 20);
    // The fence refuses the match; the insert collides with the _id: fenced_out, one document.
    w = co_await write(10, op(ml::fenced_kind::update, R"({"_id": "u"})", R"({"$set": {"value": "v10"}})", true));
    BOOST_TEST((w.ec == ml::errc::fenced_out), w.ec.message() << ": " << w.reason);
    w = co_await write(10, op(ml::fenced_kind::replace, R"({"_id": "u"})", R"({"value": "r10"})", true));
    BOOST_TEST((w.ec == ml::errc::fenced_out), w.ec.message() << ": " << w.reason);
    BOOST_TEST(raw.count() == 1);
    BOOST_TEST(raw.find("u").find(has_value("v20")) != std::string::npos, raw.find("u"));
    // An upsert that does not pin _id could insert a second document: refused before sending.
    w = co_await write(30, op(ml::fenced_kind::update, R"({"value": "v20"})", R"({"$set": {"value": "v30"}})", true));
    BOOST_TEST((w.ec == ml::errc::invalid_document), w.ec.message());
    BOOST_TEST(raw.count() == 1);
    // A newer token replaces it, keeping the one document.
    w = co_await write(30, op(ml::fenced_kind::replace, R"({"_id": "u"})", R"({"value": "r30"})", true));
    BOOST_TEST(!w.ec, w.reason);
    BOOST_TEST(w.result.matched == 1);
    BOOST_TEST(raw.count() == 1);
    BOOST_TEST(raw.fence_of("u") == 30);
  }());
}

// A delete takes the fence with the document: a stale upsert could then recreate it. A tombstone
// (a replacement that marks it deleted) keeps the fence (docs/design.md section 15).
BOOST_FIXTURE_TEST_CASE(deletes_are_fenced_and_a_tombstone_keeps_the_fence, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "d", "fence": {"$numberLong": "50"}})");
  raw.insert(R"({"_id": "t", "fence": {"$numberLong": "50"}})");
  const ml::fenced_collection where{db_name, coll};
  run([&]() -> asio::awaitable<void> {
    auto write = [&](std::int64_t token, ml::fenced_op op) -> asio::awaitable<write_outcome> {
      auto t = co_await ml::async_fenced_write(*db, token, where, one(std::move(op)), asio::as_tuple(asio::deferred));
      write_outcome out{std::get<0>(t), std::move(std::get<1>(t)), {}};
      co_return out;
    };
    auto w = co_await write(40, op(ml::fenced_kind::remove, R"({"_id": "d"})", "{}"));
    BOOST_TEST((w.ec == ml::errc::fenced_out), w.ec.message());
    BOOST_TEST(raw.count(R"({"_id": "d"})") == 1);
    w = co_await write(60, op(ml::fenced_kind::remove, R"({"_id": "d"})", "{}"));
    BOOST_TEST(!w.ec);
    BOOST_TEST(w.result.matched == 1);
    BOOST_TEST(raw.count(R"({"_id": "d"})") == 0);
    // The tombstone: a newer holder marks the document deleted; the stale one stays out.
    w = co_await write(60, op(ml::fenced_kind::replace, R"({"_id": "t"})", R"({"deleted": true})"));
    BOOST_TEST(!w.ec);
    w = co_await write(55, op(ml::fenced_kind::replace, R"({"_id": "t"})", R"({"value": "stale"})", true));
    BOOST_TEST((w.ec == ml::errc::fenced_out), w.ec.message());
    BOOST_TEST(raw.find("t").find("\"deleted\" : true") != std::string::npos, raw.find("t"));
  }());
}

BOOST_FIXTURE_TEST_CASE(bad_input_gets_a_clear_error_and_writes_nothing, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "b", "value": "initial", "fence": {"$numberLong": "5"}})");
  const std::string before = raw.find("b");
  struct bad_case {
    const char* what;
    ml::fenced_collection where;
    std::int64_t token;
    std::vector<ml::fenced_op> ops;
    ml::errc expected;
  };
  using K = ml::fenced_kind;
  const ml::fenced_collection ok{db_name, coll};
  const ml::fenced_op good{K::update, R"({"_id": "b"})", R"({"$set": {"value": "changed"}})"};
  const auto upd = [](const char* filter, const char* change) {
    return std::vector{ml::fenced_op{K::update, filter, change}};
  };
  const auto bad_doc = ml::errc::invalid_document;
  const auto short_bson = ml::document::from_bson(reinterpret_cast<const std::uint8_t*>("\x05\0\0"), 3);
  const std::vector<bad_case> cases{
      {"filter not JSON", ok, 9, upd(R"({"_id": )", R"({"$set": {"v": 1}})"), bad_doc},
      {"filter an array", ok, 9, upd(R"([1, 2])", R"({"$set": {"v": 1}})"), bad_doc},
      {"update not JSON", ok, 9, upd(R"({"_id": "b"})", R"({"$set": )"), bad_doc},
      // Invalid nested JSON once freed a document twice (exit 134); text after the object and a
      // repeated top-level key were once ignored (docs/design.md section 15, "The write").
      {"update with text after it", ok, 9, upd(R"({"_id": "b"})", R"({"$set":{"a":1}} x)"), bad_doc},
      {"update unclosed", ok, 9, upd(R"({"_id": "b"})", R"({"$set":{"a":1})"), bad_doc},
      {"update with a bad nested value", ok, 9, upd(R"({"_id": "b"})", R"({"$set":{"a":tru}})"), bad_doc},
      {"filter with a bad nested value", ok, 9, upd(R"({"_id":{"a":tru}})", R"({"$set": {"v": 1}})"), bad_doc},
      {"filter of two objects", ok, 9, upd(R"({"_id":"b"}{"x":1})", R"({"$set": {"v": 1}})"), bad_doc},
      {"update of two objects", ok, 9, upd(R"({"_id": "b"})", R"({"$set":{"a":1}}{"b":1})"), bad_doc},
      {"filter with two $or", ok, 9, upd(R"({"_id": "b", "$or":[{"a":1}],"$or":[{"b":1}]})", R"({"$set": {"v": 1}})"),
       bad_doc},
      {"update with two $set", ok, 9, upd(R"({"_id": "b"})", R"({"$set":{"x":1},"$set":{"y":2}})"), bad_doc},
      {"BSON bytes too short", ok, 9, {{K::update, short_bson, R"({"$set": {"v": 1}})"}}, bad_doc},
      {"$set of the fence", ok, 9, upd(R"({"_id": "b"})", R"({"$set": {"fence": 1}})"), bad_doc},
      {"$unset of the fence", ok, 9, upd(R"({"_id": "b"})", R"({"$unset": {"fence": ""}})"), bad_doc},
      {"$inc inside the fence", ok, 9, upd(R"({"_id": "b"})", R"({"$inc": {"fence.x": 1}})"), bad_doc},
      {"$rename onto the fence", ok, 9, upd(R"({"_id": "b"})", R"({"$rename": {"value": "fence"}})"), bad_doc},
      {"replacement with the fence", ok, 9, {{K::replace, R"({"_id": "b"})", R"({"fence": 1})"}}, bad_doc},
      {"update without operators", ok, 9, upd(R"({"_id": "b"})", R"({"value": 1})"), bad_doc},
      {"empty update", ok, 9, upd(R"({"_id": "b"})", R"({})"), bad_doc},
      {"delete with upsert", ok, 9, {{K::remove, R"({"_id": "b"})", {}, true}}, bad_doc},
      {"a bad op after a good one", ok, 9, {good, {K::update, R"({"_id": "b"})", R"({"$set": {"fence": 1}})"}},
       bad_doc},
      {"database with a space", {"bad db", coll}, 9, {good}, ml::errc::invalid_collection},
      {"collection with a $", {db_name, "a$b"}, 9, {good}, ml::errc::invalid_collection},
      {"empty collection", {db_name, ""}, 9, {good}, ml::errc::invalid_collection},
      {"fence field with a dot", {db_name, coll, "a.b"}, 9, {good}, ml::errc::invalid_options},
      {"fence field _id", {db_name, coll, "_id"}, 9, {good}, ml::errc::invalid_options},
      {"token 0", ok, 0, {good}, ml::errc::invalid_options},
  };
  run([&]() -> asio::awaitable<void> {
    for (const auto& c : cases) {
      ml::diagnostics d;
      auto [ec, r] = co_await ml::async_fenced_write(*db, c.token, c.where, c.ops, d, asio::as_tuple(asio::deferred));
      BOOST_TEST((ec == c.expected), c.what << ": " << ec.message() << " (" << d.reason << ")");
      BOOST_TEST(!d.reason.empty(), c.what);
      BOOST_TEST_MESSAGE(c.what << ": " << d.reason);
      BOOST_TEST(r.matched == 0, c.what);
    }
  }());
  BOOST_TEST(raw.find("b") == before);
  BOOST_TEST(raw.count() == 1);
  // A collection the user may not write: the emulator has no users or roles, so not_authorized
  // (the server's code 13) is mapped (store/mongo_commands.cpp, is_not_authorized) but not shown.
}

BOOST_FIXTURE_TEST_CASE(many_documents_are_fenced_each_and_the_refused_are_named, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "m0", "fence": {"$numberLong": "10"}})");
  raw.insert(R"({"_id": "m1", "fence": {"$numberLong": "90"}})");
  raw.insert(R"({"_id": "m2"})");
  raw.insert(R"({"_id": "m3", "fence": {"$numberLong": "91"}})");
  raw.insert(R"({"_id": "m4", "fence": "not a number"})");
  std::vector<ml::fenced_op> ops;
  for (int i = 0; i < 5; ++i)
    ops.push_back(
        {ml::fenced_kind::update, R"({"_id": "m)" + std::to_string(i) + R"("})", R"({"$set": {"value": "w50"}})"});
  const std::vector<std::size_t> expected_refused{1, 3, 4};
  run([&]() -> asio::awaitable<void> {
    ml::diagnostics d;
    const ml::fenced_collection where{db_name, coll};  // named: see fence.hpp on GCC 12
    auto [ec, r] = co_await ml::async_fenced_write(*db, 50, where, ops, d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::fenced_out), ec.message());
    BOOST_TEST(r.refused == expected_refused);
    BOOST_TEST(r.matched == 2);
    BOOST_TEST_MESSAGE(d.reason);
    BOOST_TEST(d.reason.find("write 1: the document's fence 90 is above") == 0, d.reason);
    BOOST_TEST(d.reason.find("3 of 5") != std::string::npos, d.reason);
  }());
  BOOST_TEST(raw.fence_of("m0") == 50);
  BOOST_TEST(raw.fence_of("m1") == 90);
  BOOST_TEST(raw.fence_of("m2") == 50);
  BOOST_TEST(raw.fence_of("m3") == 91);
  BOOST_TEST(raw.count(R"({"value": "w50"})") == 2);
}

BOOST_FIXTURE_TEST_CASE(a_configured_fence_field_and_the_empty_lease, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "f", "fence": "user data, not a fence", "epoch": {"$numberLong": "70"}})");
  run([&]() -> asio::awaitable<void> {
    const ml::fenced_collection where{db_name, coll, "epoch"};
    auto [ec, r] = co_await ml::async_fenced_update(*db, 60, where, R"({"_id": "f"})", R"({"$set": {"fence": "x"}})",
                                                    asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::fenced_out), ec.message());
    auto [ec2, r2] = co_await ml::async_fenced_update(*db, 80, where, R"({"_id": "f"})", R"({"$set": {"fence": "x"}})",
                                                      asio::as_tuple(asio::deferred));
    BOOST_TEST(!ec2);
    BOOST_TEST(raw.fence_of("f", "epoch") == 80);
    ml::lease empty;
    ml::diagnostics d;
    auto [ec3, r3] = co_await empty.async_fenced_update(where, R"({"_id": "f"})", R"({"$set": {"v": 1}})", d,
                                                        asio::as_tuple(asio::deferred));
    BOOST_TEST((ec3 == ml::errc::not_held), ec3.message());
    BOOST_TEST(!d.reason.empty());
  }());
}

// Tokens stay above a document's fence across a wiped lock collection and a re-created lock
// document (docs/design.md section 1): the next holder's write is applied, the old token's is not.
BOOST_FIXTURE_TEST_CASE(tokens_across_a_wiped_lock_collection_still_fence, io_fixture) {
  const auto coll = unique("fenced");
  const auto locks = unique("fence-locks");
  const auto name = unique("wiped");
  raw_collection data(coll), lock_docs(locks);
  data.insert(R"({"_id": "w"})");
  auto p = make_provider(fast_options(), locks);
  const ml::fenced_collection where{db_name, coll};
  run([&]() -> asio::awaitable<void> {
    auto first = co_await p.create_lock(name).async_acquire();
    co_await first.async_fenced_update(where, R"({"_id": "w"})", R"({"$set": {"value": "first"}})");
    co_await first.async_release();
    lock_docs.count();  // the document is there
    // Wiped (the emulator has no drop: every document deleted).
    bson_t* all = bson_new();
    BOOST_REQUIRE(mongoc_collection_delete_many(lock_docs.col, all, nullptr, nullptr, nullptr));
    bson_destroy(all);
    BOOST_REQUIRE(lock_docs.count() == 0);
    auto second = co_await p.create_lock(name).async_acquire();
    BOOST_TEST(second.fencing_token() > first.fencing_token());
    auto r = co_await second.async_fenced_update(where, R"({"_id": "w"})", R"({"$set": {"value": "second"}})");
    BOOST_TEST(r.matched == 1);
    co_await second.async_release();
    // Re-created by hand, as a restore from an old backup would: the token it holds is old.
    bson_t* f = BCON_NEW("_id", BCON_UTF8(name.c_str()));
    BOOST_REQUIRE(mongoc_collection_delete_one(lock_docs.col, f, nullptr, nullptr, nullptr));
    bson_destroy(f);
    lock_docs.insert(R"({"_id": ")" + name +
                     R"(", "owner": null, "token": {"$numberLong": "1"}, "beat": {"$numberLong": "1"}})");
    auto third = co_await p.create_lock(name).async_acquire();
    BOOST_TEST(third.fencing_token() > second.fencing_token());
    r = co_await third.async_fenced_update(where, R"({"_id": "w"})", R"({"$set": {"value": "third"}})");
    BOOST_TEST(r.matched == 1);
    auto [ec, stale] = co_await ml::async_fenced_update(*db, first.fencing_token(), where, R"({"_id": "w"})",
                                                        R"({"$set": {"value": "first again"}})",
                                                        asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::fenced_out), ec.message());
    co_await third.async_release();
  }());
  BOOST_TEST(data.find("w").find(has_value("third")) != std::string::npos, data.find("w"));
}

// A rw_lock's writer fences with its multi_lease's highest token: a later writer's write stands.
BOOST_FIXTURE_TEST_CASE(a_writer_set_fences_with_its_highest_token, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "rw"})");
  auto p = make_provider();
  const auto name = unique("fence-rw");
  const ml::fenced_collection where{db_name, coll};
  run([&]() -> asio::awaitable<void> {
    auto rw = p.create_rw_lock(name, {.max_readers = 3});
    auto first = co_await rw.writer().async_acquire();
    co_await first.async_release();
    auto second = co_await rw.writer().async_acquire();
    BOOST_TEST(second.highest_fencing_token() > first.highest_fencing_token());
    auto r = co_await second.async_fenced_update(where, R"({"_id": "rw"})", R"({"$set": {"value": "second"}})");
    BOOST_TEST(r.matched == 1);
    BOOST_TEST(raw.fence_of("rw") == second.highest_fencing_token());
    auto [ec, stale] = co_await ml::async_fenced_update(*db, first.highest_fencing_token(), where, R"({"_id": "rw"})",
                                                        R"({"$set": {"value": "first"}})",
                                                        asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::fenced_out), ec.message());
    co_await second.async_release();
  }());
  BOOST_TEST(raw.find("rw").find(has_value("second")) != std::string::npos, raw.find("rw"));
}

// A real process holds the lock, is frozen (SIGSTOP) past its lease, and writes when it resumes.
// Fenced, its write is refused and the next holder's stands; plain, it overwrites the next
// holder's write: the test tells the two apart.
void frozen_holder_writes(io_fixture& f, const std::string& mode, bool expect_refused) {
  const auto dir = scratch("fence-" + mode);
  const auto coll = unique("fenced");
  const auto name = unique("frozen");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "r", "value": "initial"})");
  child holder({program_path("MONGOLOCK_FENCED_WRITER"), "--uri", server_uri(), "--db", db_name, "--coll", coll,
                "--name", name, "--id", "r", "--value", "stale", "--mode", mode, "--expiry-ms", "1000",
                "--pause-ms", "400"},
               dir / "out");
  BOOST_REQUIRE_MESSAGE(holder.wait_for_text("acquired", 10s), slurp(dir / "out"));
  ::kill(holder.pid, SIGSTOP);  // a GC pause / VM freeze longer than the lease
  auto p = f.make_provider();
  f.run([&]() -> asio::awaitable<void> {
    auto next = co_await p.create_lock(name).async_acquire_for(10000ms);  // after the frozen one's expiry
    const ml::fenced_collection where{db_name, coll};
    auto r = co_await next.async_fenced_update(where, R"({"_id": "r"})", R"({"$set": {"value": "newer"}})");
    BOOST_TEST(r.matched == 1);
    ::kill(holder.pid, SIGCONT);
    co_await next.async_release();
  }());
  BOOST_TEST(holder.wait_exit_for(10s) == 0, slurp(dir / "out"));
  const auto out = slurp(dir / "out");
  BOOST_TEST_MESSAGE(mode << " holder: " << out);
  if (expect_refused) {
    BOOST_TEST(out.find("WRITE fenced_out") != std::string::npos, out);
    BOOST_TEST(raw.find("r").find(has_value("newer")) != std::string::npos, raw.find("r"));
  } else {
    BOOST_TEST(out.find("WRITE applied") != std::string::npos, out);
    BOOST_TEST(raw.find("r").find(has_value("stale")) != std::string::npos, raw.find("r"));  // the newer write lost
  }
}

BOOST_FIXTURE_TEST_CASE(a_frozen_holder_is_fenced_out_when_it_resumes, io_fixture) {
  frozen_holder_writes(*this, "fenced", true);
}

BOOST_FIXTURE_TEST_CASE(the_same_holder_writing_unfenced_loses_the_newer_write, io_fixture) {
  frozen_holder_writes(*this, "plain", false);
}

// The soak (docs/design.md section 15): 5 processes x 8 rounds on one lock (expiry 300 ms), each
// pausing up to 700 ms while it holds it (past its lease about half the time), then writing the
// history document by compare-and-swap (h.T = the `last` it replaced). Every applied write is
// recorded with its predecessor, so the document tells the order writes were applied in: with
// the fence, no write is applied after one with a higher token. Returns {out-of-order links,
// applied, refused}.
struct soak_verdict {
  int out_of_order = 0, links = 0, applied = 0, refused = 0;
};
soak_verdict paused_holders_write_history(const std::string& mode) {
  const auto dir = scratch("fence-soak-" + mode);
  const auto coll = unique("fenced-soak");
  const auto name = unique("soak");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "history", "last": {"$numberLong": "0"}})");
  std::vector<std::unique_ptr<child>> kids;
  for (int i = 0; i < 5; ++i)
    kids.push_back(std::make_unique<child>(
        std::vector<std::string>{program_path("MONGOLOCK_FENCED_WRITER"), "--uri", server_uri(), "--db", db_name,
                                 "--coll", coll, "--name", name, "--id", "history", "--mode", mode,
                                 "--expiry-ms", "300",
                                 "--pause-ms", "700", "--rounds", "8"},
        dir / ("out" + std::to_string(i))));
  soak_verdict v;
  for (std::size_t i = 0; i < kids.size(); ++i) {
    BOOST_TEST(kids[i]->wait_exit_for(50s) == 0, slurp(dir / ("out" + std::to_string(i))));
    const auto out = slurp(dir / ("out" + std::to_string(i)));
    const auto at = out.find("SOAK applied=");
    BOOST_REQUIRE_MESSAGE(at != std::string::npos, out);
    v.applied += std::atoi(out.c_str() + at + 13);
    v.refused += std::atoi(out.c_str() + out.find("refused=", at) + 8);
  }
  // The history: h.T -> the last value T replaced. Applied in token order, each link goes up.
  bson_t* f = BCON_NEW("_id", BCON_UTF8("history"));
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(raw.col, f, nullptr, nullptr);
  const bson_t* doc = nullptr;
  bson_iter_t it, h;
  if (mongoc_cursor_next(cur, &doc) && bson_iter_init_find(&it, doc, "h") && bson_iter_recurse(&it, &h)) {
    while (bson_iter_next(&h)) {
      ++v.links;
      if (bson_iter_as_int64(&h) >= std::atoll(bson_iter_key(&h))) ++v.out_of_order;
    }
  }
  mongoc_cursor_destroy(cur);
  bson_destroy(f);
  BOOST_TEST_MESSAGE(mode << " soak: " << v.applied << " applied, " << v.refused << " refused, " << v.links
                          << " links, " << v.out_of_order << " out of token order");
  return v;
}

BOOST_FIXTURE_TEST_CASE(a_soak_of_paused_holders_applies_no_write_out_of_token_order, io_fixture) {
  const auto v = paused_holders_write_history("fenced");
  BOOST_TEST(v.out_of_order == 0);
  BOOST_TEST(v.links == v.applied, "every applied write is in the history");
  BOOST_TEST(v.applied + v.refused == 40);
  BOOST_TEST(v.refused > 0, "the pauses must have produced stale writes, or the soak proved nothing");
}

// ... and its checker can fail: the same holders writing unfenced apply stale writes.
BOOST_FIXTURE_TEST_CASE(the_soak_without_the_fence_applies_writes_out_of_token_order, io_fixture) {
  const auto v = paused_holders_write_history("plain");
  BOOST_TEST(v.out_of_order > 0);
}

// A retry with the same token is not refused (the fence equals the token): ordering stays safe,
// but a write whose reply was lost after it applied applies twice. Retries must be idempotent
// (docs/design.md section 15, "What it does not cover"); this pins the behaviour.
BOOST_FIXTURE_TEST_CASE(a_retry_with_the_same_token_applies_again, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  raw.insert(R"({"_id": "r", "n": 0})");
  const ml::fenced_collection where{db_name, coll};
  run([&]() -> asio::awaitable<void> {
    for (int i = 0; i < 2; ++i) {
      auto r = co_await ml::async_fenced_update(*db, 42, where, R"({"_id": "r"})", R"({"$inc": {"n": 1}})");
      BOOST_TEST(r.matched == 1);
    }
  }());
  BOOST_TEST(raw.find("r").find(R"("n" : 2)") != std::string::npos, raw.find("r"));
  BOOST_TEST(raw.fence_of("r") == 42);
}

// An abandoned (cancelled) write sends no op after the cancellation reached it: left running, its
// remaining ops would overwrite what the caller sends again with the same token. Ops already sent
// are not recalled (docs/design.md section 15, "Cancellation").
BOOST_FIXTURE_TEST_CASE(an_abandoned_write_sends_no_further_op, io_fixture) {
  const auto coll = unique("fenced");
  raw_collection raw(coll);
  const ml::fenced_collection where{db_name, coll};
  constexpr int n = 400;
  std::vector<std::string> filters;
  for (int i = 0; i < n; ++i) filters.push_back(R"({"_id": "c)" + std::to_string(i) + R"("})");
  std::vector<ml::fenced_op> ops;
  for (const auto& f : filters)
    ops.push_back(ml::fenced_op{ml::fenced_kind::update, f, R"({"$set": {"v": 1}})", true});
  run([&]() -> asio::awaitable<void> {
    asio::cancellation_signal sig;
    asio::steady_timer t(co_await asio::this_coro::executor, 30ms);
    t.async_wait([&](error_code) { sig.emit(asio::cancellation_type::terminal); });
    auto [ec, r] = co_await ml::async_fenced_write(
        *db, 9, where, ops, asio::bind_cancellation_slot(sig.slot(), asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST((ec == asio::error::operation_aborted), ec.message());
  }());
  std::this_thread::sleep_for(500ms);  // what the worker would still send, it sends now
  const auto written = raw.count();
  std::this_thread::sleep_for(500ms);
  BOOST_TEST(raw.count() == written, "the abandoned write kept sending");
  BOOST_TEST(written < n, written << " of " << n << " ops were sent after the cancellation");
}

BOOST_AUTO_TEST_SUITE_END()
