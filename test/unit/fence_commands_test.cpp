// The commands a fenced write sends (src/store/fence_commands.cpp), built without a server: the
// caller's filter keeps its top-level fields (an upsert takes its _id from there), the fence
// clause joins the caller's own $or / $and, and the update raises the fence in $set.
#include <boost/asio/error.hpp>
#include <boost/test/unit_test.hpp>
#include <atomic>
#include <random>
#include <string>

#include "mongolock/error.hpp"
#include "store/fence_commands.hpp"
#include "store/plain_json.hpp"

namespace md = mongolock::detail;

namespace {

std::string canonical(const bson_t* b) {
  char* s = bson_as_relaxed_extended_json(b, nullptr);
  std::string out = s;
  bson_free(s);
  return out;
}

struct built {
  boost::system::error_code ec;
  std::string why, filter, change;
};

built build(md::fence_kind kind, std::string filter, std::string change, bool upsert = false) {
  md::fence_item item{kind, {std::move(filter)}, {std::move(change)}, upsert};
  md::fence_command cmd;
  built b;
  b.ec = md::build_fence_command(item, "fence", 7, cmd, &b.why);
  b.filter = canonical(&cmd.filter);
  b.change = canonical(&cmd.change);
  return b;
}

const std::string fence_or = R"("$or" : [ { "fence" : { "$lte" : 7 } }, { "fence" : { "$exists" : false } } ])";

}  // namespace

BOOST_AUTO_TEST_SUITE(fence_commands)

BOOST_AUTO_TEST_CASE(the_fence_clause_joins_the_callers_filter_at_the_top_level) {
  auto b = build(md::fence_kind::update, R"({"_id": 1, "state": "open"})", R"({"$set": {"v": 1}, "$inc": {"n": 1}})");
  BOOST_TEST(!b.ec, b.why);
  BOOST_TEST(b.filter == R"({ "_id" : 1, "state" : "open", )" + fence_or + " }");
  BOOST_TEST(b.change == R"({ "$inc" : { "n" : 1 }, "$set" : { "v" : 1, "fence" : 7 } })");
  // The caller's own $or and $and go into one $and beside the fence clause; _id stays on top.
  b = build(md::fence_kind::update, R"({"_id": 1, "$or": [{"a": 1}, {"b": 1}], "$and": [{"c": 1}]})",
            R"({"$unset": {"v": ""}})");
  BOOST_TEST(!b.ec, b.why);
  BOOST_TEST(b.filter == R"({ "_id" : 1, "$and" : [ { "c" : 1 }, { "$or" : [ { "a" : 1 }, { "b" : 1 } ] }, { )" +
                             fence_or + " } ] }");
  BOOST_TEST(b.change == R"({ "$unset" : { "v" : "" }, "$set" : { "fence" : 7 } })");
}

BOOST_AUTO_TEST_CASE(a_replacement_carries_the_fence_and_a_delete_changes_nothing_else) {
  auto b = build(md::fence_kind::replace, R"({"_id": "x"})", R"({"v": 2})", true);
  BOOST_TEST(!b.ec, b.why);
  BOOST_TEST(b.change == R"({ "v" : 2, "fence" : 7 })");
  b = build(md::fence_kind::remove, R"({"_id": "x"})", "");
  BOOST_TEST(!b.ec, b.why);
  BOOST_TEST(b.change == "{ }");
}

BOOST_AUTO_TEST_CASE(an_upsert_must_pin_its_id) {
  BOOST_TEST(!build(md::fence_kind::update, R"({"_id": {"k": 1}})", R"({"$set": {"v": 1}})", true).ec);
  for (const char* filter : {R"({"v": 1})", R"({"_id": {"$in": [1, 2]}})", R"({"_id": {"$regex": "a"}})",
                             R"({"$or": [{"_id": 1}]})"}) {
    const auto b = build(md::fence_kind::update, filter, R"({"$set": {"v": 1}})", true);
    BOOST_TEST((b.ec == mongolock::errc::invalid_document), filter);
    BOOST_TEST(b.why.find("_id") != std::string::npos, b.why);
  }
}

BOOST_AUTO_TEST_CASE(an_update_that_touches_the_fence_is_refused) {
  for (const char* change : {R"({"$set": {"fence": 1}})", R"({"$max": {"fence": 1}})", R"({"$set": {"fence.a": 1}})",
                             R"({"$rename": {"x": "fence"}})", R"({"$rename": {"fence": "x"}})",
                             R"({"$setOnInsert": {"fence": 1}})"}) {
    const auto b = build(md::fence_kind::update, R"({"_id": 1})", change);
    BOOST_TEST((b.ec == mongolock::errc::invalid_document), change);
  }
  // A field whose name only starts with the fence's is the caller's.
  BOOST_TEST(!build(md::fence_kind::update, R"({"_id": 1})", R"({"$set": {"fencepost": 1}})").ec);
}

// Input libbson's reader fails on, a nested document already opened included, is refused without
// a crash (bson_init_from_json destroyed the half-built document, and its owner again), and so is
// text after the object (once applied as if it were not there) or a repeated top-level key (a
// second $set was dropped, a second $or was not fenced as the server reads it).
BOOST_AUTO_TEST_CASE(bad_trailing_or_repeated_json_is_refused) {
  const std::string set = R"({"$set": {"a": 1}})";
  const std::pair<std::string, std::string> cases[] = {
      {R"({"_id": 1})", R"({"$set":{"a":1}} x)"},
      {R"({"_id": 1})", R"({"$set":{"a":1})"},
      {R"({"_id": 1})", R"({"$set":{"a":tru}})"},
      {R"({"_id":{"a":tru}})", set},
      {R"({"_id":"p"}{"x":1})", set},
      {R"({"_id": 1})", R"({"$set":{"a":1}}{"b":1})"},
      {R"({"$or":[{"a":1}],"$or":[{"b":1}]})", set},
      {R"({"$and":[{"a":1}],"$and":[{"b":1}]})", set},
      {R"({"a":1,"a":2})", set},
      {R"({"_id": 1})", R"({"$set":{"x":1},"$set":{"y":2}})"},
  };
  for (const auto& [filter, change] : cases) {
    const auto b = build(md::fence_kind::update, filter, change);
    BOOST_TEST((b.ec == mongolock::errc::invalid_document), filter << " " << change << ": " << b.ec.message());
    BOOST_TEST(!b.why.empty(), filter << " " << change);
    BOOST_TEST_MESSAGE(filter << " " << change << ": " << b.why);
  }
  const auto b = build(md::fence_kind::replace, R"({"_id": 1})", R"({"v": 1, "v": 2})");
  BOOST_TEST((b.ec == mongolock::errc::invalid_document), b.why);
  // Trailing blanks are not a second document.
  BOOST_TEST(!build(md::fence_kind::update, " {\"_id\": 1} \n", set + "\n\t ").ec);
}

// libbson's reader as fence_commands.cpp drives it: one object and nothing after it.
bool libbson_reads(const std::string& text, bson_t* out) {
  bson_json_reader_t* reader = bson_json_data_reader_new(false, 0);
  bson_json_data_reader_ingest(reader, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  bson_t second;
  bson_init(&second);
  bson_error_t err;
  const bool ok = bson_json_reader_read(reader, out, &err) == 1 && bson_json_reader_read(reader, &second, &err) == 0;
  bson_destroy(&second);
  bson_json_reader_destroy(reader);
  return ok;
}

std::string bytes(const bson_t* b) { return {reinterpret_cast<const char*>(bson_get_data(b)), b->len}; }

// What the fast path reads, it reads to libbson's bytes; `expect` says whether it should read it.
void same_as_libbson(const std::string& text, bool expect) {
  bson_t plain, lib;
  bson_init(&plain);
  bson_init(&lib);
  const bool read = md::parse_plain_json(text, &plain);
  BOOST_TEST(read == expect, text);
  if (read) {
    BOOST_TEST(libbson_reads(text, &lib), text);
    BOOST_TEST(bytes(&plain) == bytes(&lib), text << ": " << canonical(&plain) << " vs " << canonical(&lib));
  } else {
    BOOST_TEST(bson_empty(&plain), text);
  }
  bson_destroy(&plain);
  bson_destroy(&lib);
}

struct json_maker {
  std::mt19937 rng{2026};
  int pick(int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); }
  std::string blank() {
    static const char* b[] = {"", "", " ", "\n", "\t", "\r\n  "};
    return b[pick(6)];
  }
  std::string key() {
    static const char* k[] = {"_id", "a", "n", "fence", "$set", "$inc", "$or", "$and", "$lte", "$exists", "$in",
                              "x.y", "long key with spaces", "$unset", "$max", "Z9"};
    return std::string("\"") + k[pick(16)] + "\"";
  }
  std::string integer() {
    static const char* n[] = {"0", "1", "-1", "2147483647", "2147483648", "-2147483648", "-2147483649",
                              "999999999999999999", "-999999999999999999", "1000000", "42"};
    return n[pick(11)];
  }
  std::string string() {
    std::string s = "\"";
    for (int i = pick(8); i > 0; --i) {
      char c = static_cast<char>(0x20 + pick(0x5f));
      s += (c == '"' || c == '\\') ? 'q' : c;
    }
    return s + "\"";
  }
  std::string value(int depth) {
    switch (depth > 4 ? 2 + pick(4) : pick(6)) {
      case 0: return object(depth + 1);
      case 1: {
        std::string a = "[" + blank();
        for (int i = pick(4); i > 0; --i) a += value(depth + 1) + blank() + (i > 1 ? "," + blank() : "");
        return a + "]";
      }
      case 2: return integer();
      case 3: return string();
      case 4: return pick(2) ? "true" : "false";
      default: return "null";
    }
  }
  std::string object(int depth) {
    std::string o = "{" + blank();
    for (int i = pick(4); i > 0; --i)
      o += key() + blank() + ":" + blank() + value(depth) + blank() + (i > 1 ? "," + blank() : "");
    return o + "}";
  }
};

// The fast path for plain JSON (store/plain_json.hpp) reads exactly what libbson's reader makes of
// the same text, and leaves to libbson everything outside its subset: extended JSON wrappers,
// doubles, escapes, non-ASCII, what libbson reads otherwise ({"$type": ...} as a query operator)
// and every error.
BOOST_AUTO_TEST_CASE(plain_json_reads_exactly_what_libbson_reads) {
  for (const char* t : {R"({})", R"({"_id": 1})", R"(  {"_id" : 17 } )", R"({"$inc": {"n": 1}})",
                        R"({"$set": {"a": "text", "b": true, "c": false, "d": null}, "$unset": {"e": ""}})",
                        R"({"a": [1, [2, {"b": []}], {}], "n": -2147483648, "m": -2147483649, "k": 2147483648})",
                        R"({"$or": [{"fence": {"$lte": 999999999999999999}}, {"fence": {"$exists": false}}]})",
                        R"({"a": 1, "a": 2})", "{\"a\":\t1,\r\n\"b\":2}"})
    same_as_libbson(t, true);
  for (const char* t : {R"({"n": {"$numberLong": "5"}})", R"({"_id": {"$oid": "5f0000000000000000000000"}})",
                        R"({"x": {"$type": "string"}})", R"({"x": {"$regex": "^a", "$options": "i"}})",
                        R"({"d": {"$date": 0}})", R"({"a": 1.5})", R"({"a": 1e3})", R"({"a": -0})", R"({"a": 01})",
                        R"({"a": 1234567890123456789})", R"({"a": "\u00e9"})", "{\"a\": \"\xc3\xa9\"}",
                        R"({"a": "tab\there"})", "{\"a\": \"\x7f\"}", R"({"": 1})", R"({"a": 1,})",
                        R"({"a": 1} {"b": 2})",
                        R"({"a": 1} x)", R"([1, 2])", R"({"a": tru})", R"({"a": 1)", R"({"a" 1})", R"({a: 1})", "",
                        "{\"a\": 1}\f"})
    same_as_libbson(t, false);
  std::string deep = "{\"a\":1}";
  for (int i = 0; i < 40; ++i) deep = "{\"a\":" + deep + "}";
  same_as_libbson(deep, false);
  // Random documents of the subset, and random damage to them: whatever the fast path reads,
  // libbson reads to the same bytes.
  json_maker make;
  const std::string damage = "{}[],:\"\\-09.eEtfn \x7f\xc3$";
  for (int i = 0; i < 3000; ++i) {
    std::string text = make.blank() + make.object(0) + make.blank();
    same_as_libbson(text, true);
    for (int j = 0; j < 10; ++j) {
      std::string bad = text;
      const auto at = static_cast<std::size_t>(make.pick(static_cast<int>(bad.size()) + 1));
      switch (make.pick(3)) {
        case 0: bad.insert(at, 1, damage[static_cast<std::size_t>(make.pick(static_cast<int>(damage.size())))]); break;
        case 1: if (at < bad.size()) bad.erase(at, 1); break;
        default: bad.resize(at);
      }
      bson_t plain, lib;
      bson_init(&plain);
      bson_init(&lib);
      if (md::parse_plain_json(bad, &plain)) {
        BOOST_TEST(libbson_reads(bad, &lib), bad);
        BOOST_TEST(bytes(&plain) == bytes(&lib), bad);
      } else {
        BOOST_TEST(bson_empty(&plain), bad);
      }
      bson_destroy(&plain);
      bson_destroy(&lib);
    }
  }
}

// The read after a write that matched nothing (docs/design.md section 15, "Cost"): a double fence
// compares exactly with the int64 token, as the server's $lte does. 2^62 + 1024 is above the token
// 2^62 + 600 though the token rounds to that double; NaN never passes $lte.
BOOST_AUTO_TEST_CASE(the_read_after_a_miss_compares_a_fence_exactly) {
  using S = md::fence_seen;
  const std::int64_t token = (std::int64_t{1} << 62) + 600;
  const auto seen = [&](const std::string& json) {
    bson_error_t err;
    bson_t* doc = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(json.data()), -1, &err);
    BOOST_REQUIRE_MESSAGE(doc, json << ": " << err.message);
    std::string refusal;
    const auto s = md::classify_fence(doc, "fence", token, &refusal);
    bson_destroy(doc);
    BOOST_TEST((s != S::refused || !refusal.empty()), json);
    return s;
  };
  std::string none;
  BOOST_TEST((md::classify_fence(nullptr, "fence", token, &none) == S::no_document));
  BOOST_TEST((seen(R"({"_id": 1})") == S::writable));
  BOOST_TEST((seen(R"({"fence": {"$numberLong": ")" + std::to_string(token) + R"("}})") == S::writable));
  BOOST_TEST((seen(R"({"fence": {"$numberLong": ")" + std::to_string(token + 1) + R"("}})") == S::refused));
  BOOST_TEST((seen(R"({"fence": {"$numberDouble": "NaN"}})") == S::refused));
  BOOST_TEST((seen(R"({"fence": {"$numberDouble": "4611686018427388928"}})") == S::refused));
  BOOST_TEST((seen(R"({"fence": {"$numberDouble": "4611686018427387904"}})") == S::writable));
  BOOST_TEST((seen(R"({"fence": {"$numberDouble": "Infinity"}})") == S::refused));
  BOOST_TEST((seen(R"({"fence": {"$numberDouble": "-Infinity"}})") == S::writable));
  BOOST_TEST((seen(R"({"fence": 2.5})") == S::writable));
  BOOST_TEST((seen(R"({"fence": "7"})") == S::refused));
  BOOST_TEST((seen(R"({"fence": [1, 2]})") == S::refused));
}

// What a miss means. A document the fence lets this token write, after a write that matched
// nothing, contradicts the write (it changed in between): resent once, then ambiguous, never a
// success. An upsert whose insert collided on _id (E11000) while the fence lets it write lost a
// race with a concurrent upsert, whose insert landed between its empty match and its own: resent
// once (the emulator serialises commands and cannot show the race); again, it is another index.
BOOST_AUTO_TEST_CASE(a_miss_is_judged_and_a_contradiction_is_resent_once) {
  using S = md::fence_seen;
  using V = md::miss_verdict;
  BOOST_TEST((md::judge_miss(S::no_document, false, false) == V::not_matched));
  BOOST_TEST((md::judge_miss(S::refused, false, false) == V::refused));
  BOOST_TEST((md::judge_miss(S::refused, true, true) == V::refused));
  BOOST_TEST((md::judge_miss(S::writable, false, false) == V::resend));
  BOOST_TEST((md::judge_miss(S::writable, false, true) == V::ambiguous));
  BOOST_TEST((md::judge_miss(S::writable, true, false) == V::resend));
  BOOST_TEST((md::judge_miss(S::writable, true, true) == V::server_error));
  BOOST_TEST((md::judge_miss(S::no_document, true, false) == V::resend));
  BOOST_TEST((md::judge_miss(S::no_document, true, true) == V::server_error));
}

// The read sees what the write's filter saw: the primary's latest state (read concern local),
// not a majority snapshot that may still show an older fence, or no document.
BOOST_AUTO_TEST_CASE(the_read_after_a_miss_is_local_at_the_primary) {
  bson_t opts;
  bson_init(&opts);
  mongoc_read_prefs_t* prefs = nullptr;
  md::fence_read_opts("fence", &opts, &prefs);
  BOOST_TEST(canonical(&opts).find(R"("readConcern" : { "level" : "local" })") != std::string::npos, canonical(&opts));
  BOOST_TEST((mongoc_read_prefs_get_mode(prefs) == MONGOC_READ_PRIMARY));
  mongoc_read_prefs_destroy(prefs);
  bson_destroy(&opts);
}

// An abandoned write sends nothing more (docs/design.md section 15, "Cancellation"): stopped
// while queued for a worker, it sends nothing at all and touches no client.
BOOST_AUTO_TEST_CASE(an_abandoned_write_sends_nothing_more) {
  md::fence_request r;
  r.database = "db";
  r.collection = "c";
  r.token = 7;
  r.items.push_back({md::fence_kind::update, {R"({"_id": 1})"}, {R"({"$set": {"v": 1}})"}});
  const std::atomic<bool> stop{true};
  const auto out = md::fenced_write(nullptr, r, &stop);
  BOOST_TEST((out.ec == boost::asio::error::operation_aborted), out.message);
  BOOST_TEST(out.value.matched == 0);
}

// Every token a take can write is accepted, those past the token clock's cap included: a take
// over a document at the cap writes cap + 1 and counts on by one from there (docs/design.md
// sections 1 and 15), up to the largest int64 (next_token writes nothing above it). Only a token
// no acquisition carries (0, an empty lease's, or below) is refused.
BOOST_AUTO_TEST_CASE(every_token_a_take_can_write_is_accepted) {
  md::fence_request r;
  r.database = "db";
  r.collection = "c";
  std::string why;
  for (const std::int64_t t : {md::token_clock_cap, *md::next_token(md::token_clock_cap, md::token_clock_cap),
                               *md::next_token(INT64_MAX - 1, md::token_clock_cap)}) {
    r.token = t;
    BOOST_TEST(!md::check_fence_request(r, &why), t << ": " << why);
  }
  BOOST_TEST(*md::next_token(INT64_MAX - 1, md::token_clock_cap) == INT64_MAX);
  for (const std::int64_t t : {std::int64_t{0}, std::int64_t{-1}, INT64_MIN}) {
    r.token = t;
    BOOST_TEST((md::check_fence_request(r, &why) == mongolock::errc::invalid_options), t);
  }
}

BOOST_AUTO_TEST_SUITE_END()
