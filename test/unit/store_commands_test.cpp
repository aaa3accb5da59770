// The libmongoc command documents, built without a server. The emulator has no secondaries, no
// read concern levels and no write concern, so what we *send* for those is checked here.
#include <boost/test/unit_test.hpp>
#include <set>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "store/mongo_commands.hpp"
#include "mongolock/error.hpp"

namespace ml = mongolock;
using ml::detail::read_mode;

namespace {

std::string json(const bson_t* b) {
  char* s = bson_as_relaxed_extended_json(b, nullptr);
  std::string out = s;
  bson_free(s);
  return out;
}

struct read_opts {
  bson_t opts = BSON_INITIALIZER;
  mongoc_read_prefs_t* prefs = nullptr;
  explicit read_opts(read_mode mode) { ml::detail::build_read_opts(mode, &opts, &prefs); }
  ~read_opts() {
    bson_destroy(&opts);
    mongoc_read_prefs_destroy(prefs);
  }
};

ml::detail::take_request over(std::string owner, std::int64_t token, std::int64_t beat) {
  ml::detail::take_request t;
  t.name = "jobs";
  t.owner = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";
  t.token = (std::int64_t{8} << 32) + 1;
  t.expiry = std::chrono::milliseconds{30000};
  t.observed.exists = true;
  t.observed.held.owner = std::move(owner);
  t.observed.held.token = token;
  t.observed.held.beat = beat;
  return t;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(store_commands)

// Reads inherited the URI's readPreference, so `readPreference=secondary`
// made the engine wait on (and take over from) a lagging copy. Every read names the primary.
BOOST_AUTO_TEST_CASE(reads_always_name_the_primary) {
  for (auto mode : {read_mode::primary, read_mode::majority}) {
    read_opts r(mode);
    BOOST_REQUIRE(r.prefs != nullptr);
    BOOST_TEST(mongoc_read_prefs_get_mode(r.prefs) == MONGOC_READ_PRIMARY);
  }
}

// An acquire's reads (waiting reads, re-checks) and a declaration's read must not see a write that
// a failover can still roll back: majority read concern. Status and inspection stay at the default.
BOOST_AUTO_TEST_CASE(majority_reads_set_the_read_concern_and_primary_reads_do_not) {
  const read_opts recheck(read_mode::majority), waiting(read_mode::primary);
  BOOST_TEST(json(&recheck.opts) == R"({ "readConcern" : { "level" : "majority" } })");
  BOOST_TEST(json(&waiting.opts) == "{ }");
}

// A takeover matches exactly the holder that was observed expiring, heartbeat included: a
// holder that renewed in between (beat moved) or a new holder (token moved) defeats it.
BOOST_AUTO_TEST_CASE(takeover_filter_is_the_observed_holder_at_its_heartbeat) {
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_swap(over("a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", 21474836487, 12), 0, &filter, &change);
  BOOST_TEST(json(&filter) ==
             R"({ "_id" : "jobs", "owner" : "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", "token" : 21474836487, "beat" : 12 })");
  const std::string c = json(&change);
  BOOST_TEST(c.find(R"("owner" : "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0")") != std::string::npos);
  BOOST_TEST(c.find(R"("token" : 34359738369)") != std::string::npos, "the new token");
  BOOST_TEST(c.find("21474836487") == std::string::npos, "not the observed one");
  BOOST_TEST(c.find(R"("beat" : )") != std::string::npos, "a beat of its own");
  // Not the observed beat: 12 followed by its delimiter (a fresh random beat may begin with "12").
  BOOST_TEST(c.find(R"("beat" : 12,)") == std::string::npos, c);
  BOOST_TEST(c.find(R"("beat" : 12 })") == std::string::npos, c);
  // A new holder has proclaimed no election value yet: the previous holder's goes.
  BOOST_TEST(c.find(R"("$unset" : { "idle_since" : "", "value" : "" })") != std::string::npos, c);
  bson_destroy(&filter);
  bson_destroy(&change);
}

// One renewal command for several leases, each matched by its own
// (name, owner, token), never by name alone; one lease needs no $or.
BOOST_AUTO_TEST_CASE(a_batched_renewal_matches_each_lease_by_owner_and_token) {
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_renewal({{"a", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", 7}, {"b", "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", 9}},
                            std::chrono::milliseconds{30000}, 0, &filter, &change);
  BOOST_TEST(json(&filter) == R"({ "$or" : [ { "_id" : "a", "owner" : "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", "token" : 7 }, )"
                              R"({ "_id" : "b", "owner" : "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", "token" : 9 } ] })");
  const std::string c = json(&change);
  BOOST_TEST(c.find(R"("$set" : { "beat" : )") != std::string::npos);
  BOOST_TEST(c.find(R"("$inc")") == std::string::npos, "a beat is never counted up");
  BOOST_TEST(c.find(R"("expiry_ms" : 30000)") != std::string::npos);
  bson_destroy(&filter);
  bson_destroy(&change);
  bson_t one = BSON_INITIALIZER, change1 = BSON_INITIALIZER;
  ml::detail::build_renewal({{"a", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", 7}}, std::chrono::milliseconds{30000}, 0, &one,
                            &change1);
  BOOST_TEST(json(&one) == R"({ "_id" : "a", "owner" : "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", "token" : 7 })");
  bson_destroy(&one);
  bson_destroy(&change1);
}

// Taking a free lock matches owner: null (not a missing field), so a document some other tool
// wrote without an owner field is never mistaken for free; and the token alone, not the beat (a
// free state exists once per token: the releasing provider swaps without knowing its beat).
BOOST_AUTO_TEST_CASE(taking_a_free_lock_matches_owner_null) {
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_swap(over("", 5, 3), 0, &filter, &change);
  BOOST_TEST(json(&filter) == R"({ "_id" : "jobs", "owner" : null, "token" : 5 })");
  bson_destroy(&filter);
  bson_destroy(&change);
}

// The blind take (docs/design.md section 1): a free lock document below its token, of no declared
// kind, with nobody in line when asked; the owner's equality is what an upsert inserts, and the
// $set replaces it. Sent as an upsert (take()), so a missing document is created.
BOOST_AUTO_TEST_CASE(the_blind_take_matches_a_free_lock_below_its_token_with_nobody_in_line) {
  auto t = over("", 5, 3);
  t.observed = {};  // not read: blind
  t.nobody_waiting = true;
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_swap(t, 0, &filter, &change);
  BOOST_TEST(json(&filter) == R"({ "_id" : "jobs", "owner" : null, "token" : { "$lt" : 34359738369 }, )"
                              R"("kind" : { "$exists" : false }, "waiting" : { "$in" : [ null, 0 ] } })");
  BOOST_TEST(json(&change).find(R"("owner" : "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0", "token" : 34359738369)") !=
                 std::string::npos, json(&change));
  bson_destroy(&filter);
  bson_destroy(&change);
}

// A beat never repeats (docs/design.md section 2, step 2): each write draws a new one, so a
// renewal redone after a rollback cannot recreate a heartbeat a waiter saw.
BOOST_AUTO_TEST_CASE(every_write_draws_a_beat_of_its_own) {
  auto beat_of = [](const std::string& change) {
    const auto at = change.find(R"("beat" : )");
    BOOST_REQUIRE(at != std::string::npos);
    return std::stoll(change.substr(at + 9));
  };
  std::set<long long> beats;
  for (int i = 0; i < 50; ++i) {
    bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
    ml::detail::build_renewal({{"a", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", 7}}, std::chrono::milliseconds{30000}, 0,
                              &filter, &change);
    beats.insert(beat_of(json(&change)));
    bson_destroy(&filter);
    bson_destroy(&change);
  }
  BOOST_TEST(beats.size() == 50u);
  BOOST_TEST(*beats.begin() >= 0);
}

// Every take records who took it; a release removes it again.
BOOST_AUTO_TEST_CASE(takes_record_the_holder_and_releases_remove_it) {
  auto t = over("", 5, 3);
  t.meta = {"web-7", 4242, "nightly", ""};
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_swap(t, 0, &filter, &change);
  const std::string meta = R"("host" : "web-7", "pid" : 4242, "label" : "nightly")";
  BOOST_TEST(json(&change).find(meta) != std::string::npos, json(&change));
  bson_destroy(&filter);
  bson_destroy(&change);
}

// A hand-off to the head of the line (docs/design.md section 7): matched on the releaser's (owner,
// token), the head's entry and, when it enrolls the releaser's next waiter, the ticket counter;
// the line count stays (one out, one in). A refresh is a real write on the entry.
BOOST_AUTO_TEST_CASE(a_hand_off_to_the_line_matches_the_head_and_enrolls_with_the_next_ticket) {
  auto t = over("a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", 40, 9);
  t.hand_over = true;
  t.owner = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
  t.leaving.push_back({t.owner, 6});
  t.enroll = ml::detail::line_entry{"d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4", 8};
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_swap(t, 0, &filter, &change);
  BOOST_TEST(json(&filter) == R"({ "_id" : "jobs", "owner" : "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", "token" : 40, )"
                              R"("line.c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3" : 6, "tickets" : 8 })");
  const auto c = json(&change);
  BOOST_TEST(c.find(R"("owner" : "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3")") != std::string::npos, c);
  BOOST_TEST(c.find(R"("line.d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4" : 8, "tickets" : 9)") != std::string::npos, c);
  BOOST_TEST(c.find(R"("line.c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3" : "")") != std::string::npos, c);
  BOOST_TEST(c.find("waiting") == std::string::npos, c);
  bson_t rf = BSON_INITIALIZER, rc = BSON_INITIALIZER;
  ml::detail::build_refresh("jobs", "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4", 8, &rf, &rc);
  BOOST_TEST(json(&rf) == R"({ "_id" : "jobs", "line.d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4" : 8 })");
  BOOST_TEST(json(&rc) == R"({ "$inc" : { "line_beat" : 1 } })");
  bson_destroy(&filter);
  bson_destroy(&change);
  bson_destroy(&rf);
  bson_destroy(&rc);
}

// Every renewal names this process: a lock handed over by another process shows its real
// holder from the first renewal on.
BOOST_AUTO_TEST_CASE(renewals_record_the_holder) {
  const ml::detail::holder_meta me{"web-7", 4242, "nightly", ""};
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_renewal({{"jobs", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", 40}}, std::chrono::milliseconds{30000}, 0,
                            &filter, &change, &me);
  BOOST_TEST(json(&change).find(R"("host" : "web-7", "pid" : 4242, "label" : "nightly")") != std::string::npos,
             json(&change));
  bson_destroy(&filter);
  bson_destroy(&change);
}

// What a failed call means. A writeConcernError on a sent write is ambiguous_result (applied on
// the primary, durability unknown): never a grant, never "not taken".
BOOST_AUTO_TEST_CASE(failures_are_classified_by_what_the_server_may_have_applied) {
  bson_error_t e{};
  e.domain = MONGOC_ERROR_WRITE_CONCERN;
  auto wce = ml::detail::classify<bool>(e, true);
  BOOST_TEST((wce.ec == ml::errc::ambiguous_result));
  BOOST_TEST(wce.ambiguous);
  e.domain = MONGOC_ERROR_STREAM;
  auto lost_reply = ml::detail::classify<bool>(e, true);
  BOOST_TEST((lost_reply.ec == ml::errc::server_unavailable));
  BOOST_TEST(lost_reply.ambiguous);
  BOOST_TEST(!ml::detail::classify<bool>(e, false).ambiguous, "a read cannot have applied anything");
  e.domain = MONGOC_ERROR_SERVER_SELECTION;
  auto unsent = ml::detail::classify<bool>(e, true);
  BOOST_TEST((unsent.ec == ml::errc::server_unavailable));
  BOOST_TEST(!unsent.ambiguous, "server selection failed: nothing was sent");
  e.domain = MONGOC_ERROR_SERVER;
  e.code = 2;  // BadValue: a refusal that is not about authorization
  auto refused = ml::detail::classify<bool>(e, true);
  BOOST_TEST((refused.ec == ml::errc::server_error));
  BOOST_TEST(refused.message.find("server error 2") == 0);
}

// libmongoc resends a failed single-document write once (retryable writes) and reports only the
// resend's error: a not-primary error may answer a write whose first attempt was applied (docs/
// design.md section 2). Such an error on a sent write, and any with a RetryableWriteError label,
// is ambiguous: a take is re-checked and given back, never left under an owner nobody renews.
BOOST_AUTO_TEST_CASE(an_error_the_driver_retries_on_a_sent_write_is_ambiguous) {
  bson_error_t e{};
  e.domain = MONGOC_ERROR_SERVER;
  // NotWritablePrimary, LegacyNotPrimary, NotPrimaryNoSecondaryOk, NotPrimaryOrSecondary,
  // PrimarySteppedDown, ShutdownInProgress, InterruptedAtShutdown, InterruptedDueToReplStateChange
  for (std::uint32_t code : {10107u, 10058u, 13435u, 13436u, 189u, 91u, 11600u, 11602u}) {
    e.code = code;
    auto o = ml::detail::classify<bool>(e, true);
    BOOST_TEST((o.ec == ml::errc::server_error), code);
    BOOST_TEST(o.ambiguous, code);
    BOOST_TEST(!ml::detail::classify<bool>(e, false).ambiguous, "a read cannot have applied anything");
  }
  // Any error labelled RetryableWriteError (the driver's own for network errors, or the server's).
  e.code = 50;  // MaxTimeMSExpired: not in the list above
  bson_t labelled = BSON_INITIALIZER, labels;
  BSON_APPEND_ARRAY_BEGIN(&labelled, "errorLabels", &labels);
  BSON_APPEND_UTF8(&labels, "0", "RetryableWriteError");
  bson_append_array_end(&labelled, &labels);
  BOOST_TEST(ml::detail::classify<bool>(e, true, &labelled).ambiguous);
  BOOST_TEST(!ml::detail::classify<bool>(e, false, &labelled).ambiguous);
  bson_destroy(&labelled);
  bson_t unlabelled = BSON_INITIALIZER;
  BSON_APPEND_INT32(&unlabelled, "ok", 0);
  BOOST_TEST(!ml::detail::classify<bool>(e, true, &unlabelled).ambiguous, "a plain refusal applied nothing");
  bson_destroy(&unlabelled);
  e.code = 2;  // BadValue
  BOOST_TEST(!ml::detail::classify<bool>(e, true).ambiguous);
}

// An authentication failure or a missing privilege is its own error (the CLI
// exits 77 for it), not a generic server error.
BOOST_AUTO_TEST_CASE(authentication_and_privilege_failures_are_not_authorized) {
  bson_error_t e{};
  e.domain = MONGOC_ERROR_CLIENT;
  e.code = MONGOC_ERROR_CLIENT_AUTHENTICATE;
  std::snprintf(e.message, sizeof e.message, "Authentication failed.");
  auto auth = ml::detail::classify<bool>(e, true);
  BOOST_TEST((auth.ec == ml::errc::not_authorized));
  BOOST_TEST(!auth.ambiguous, "refused before anything was applied");
  BOOST_TEST(auth.message == "Authentication failed.");
  e.domain = MONGOC_ERROR_SERVER;
  for (std::uint32_t code : {13u, 18u}) {
    e.code = code;
    BOOST_TEST((ml::detail::classify<bool>(e, true).ec == ml::errc::not_authorized), code);
  }
}

// A document's numbers may be doubles of any size; libbson's own conversion
// is undefined beyond int64 (and for NaN), so they saturate, and NaN reads as a missing field.
BOOST_AUTO_TEST_CASE(a_lock_document_with_huge_or_nan_doubles_parses_to_saturated_values) {
  bson_t* doc = BCON_NEW("_id", "x", "owner", "someone", "token", BCON_DOUBLE(1e300), "beat", BCON_DOUBLE(-1e300),
                         "expiry_ms", BCON_DOUBLE(std::nan("")), "pid", BCON_DOUBLE(42.9));
  const auto d = ml::detail::parse_lock(doc);
  bson_destroy(doc);
  BOOST_TEST(d.held.token == std::numeric_limits<std::int64_t>::max());
  BOOST_TEST(d.held.beat == std::numeric_limits<std::int64_t>::min());
  BOOST_TEST(d.held.expiry.count() == 0);
  BOOST_TEST(d.meta->pid == 42);
}

// The token clock counts nanoseconds since 1970, at least 1, and stops at the cap (year 2189), so
// that a clock set centuries ahead leaves 2^61 tokens to count by one; above any token of the
// earlier layout (epoch << 32 | count, epochs from 1.76e8) today. A release's idle_since is never
// before its token's time.
BOOST_AUTO_TEST_CASE(the_token_clock_counts_nanoseconds_and_is_bounded) {
  using ml::detail::token_clock;
  using ml::detail::token_clock_cap;
  using namespace std::chrono;
  BOOST_TEST(token_clock(nanoseconds{25}) == 25);
  BOOST_TEST(token_clock(nanoseconds{-3600}) == 1);
  BOOST_TEST(token_clock(seconds{1795305600}) == 1'795'305'600'000'000'000);  // 2026-11-22
  const seconds year_2200{std::int64_t{86400} * 365 * 230};  // past the cap, within system_clock's range
  BOOST_TEST(token_clock(system_clock::time_point(duration_cast<system_clock::duration>(year_2200))) == token_clock_cap);
  BOOST_TEST(token_clock(system_clock::time_point::max()) == token_clock_cap);
  BOOST_TEST(token_clock(system_clock::time_point::min()) == 1);
  BOOST_TEST(std::numeric_limits<std::int64_t>::max() - token_clock_cap == (std::int64_t{1} << 61) - 1);
  BOOST_TEST(token_clock(seconds{1795305600}) > ((std::int64_t{180'000'000} << 32) | 0xffffffff), "above the old layout");
  BOOST_TEST(ml::detail::token_ms(1'795'305'600'123'456'789) == 1'795'305'600'123);
  BOOST_TEST(ml::detail::token_ms(std::numeric_limits<std::int64_t>::max()) == token_clock_cap / 1'000'000,
             "a token past the cap reads as the cap's time, never as 1970");
}

// A release writes idle_since no earlier than its token's time; freeing by owner id, which does
// not know the tokens, writes none (the TTL clean-up then waits for a later release).
BOOST_AUTO_TEST_CASE(idle_since_is_never_before_the_tokens_time) {
  const std::int64_t ahead_ms = ml::detail::wall_ms() + 7'200'000;  // a token drawn 2 h ahead
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_release("jobs", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", ahead_ms * 1'000'000, &filter, &change);
  bson_iter_t it;
  BOOST_REQUIRE(bson_iter_init_find(&it, &change, "$set"));
  bson_iter_t set;
  BOOST_REQUIRE(bson_iter_recurse(&it, &set) && bson_iter_find(&set, "idle_since"));
  BOOST_TEST(bson_iter_date_time(&set) == ahead_ms);
  bson_destroy(&filter);
  bson_destroy(&change);
  bson_t f2 = BSON_INITIALIZER, c2 = BSON_INITIALIZER;
  ml::detail::build_release_owners({"jobs"}, {"a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"}, &f2, &c2);
  BOOST_TEST(json(&c2).find("idle_since") == std::string::npos, json(&c2));
  bson_destroy(&f2);
  bson_destroy(&c2);
}

// A host whose clock is behind the server's by more than half of idle_cleanup is warned at the
// provider's server check (section 1's assumption for tokens across the TTL clean-up).
BOOST_AUTO_TEST_CASE(a_clock_far_behind_the_servers_is_warned_of) {
  using ml::detail::clock_behind_warning;
  ml::detail::server_info s;
  s.client_time_ms = 1'000'000'000;
  BOOST_TEST(clock_behind_warning(s, std::chrono::seconds{3600}).empty(), "the server did not say");
  s.local_time_ms = s.client_time_ms + 1'800'000;
  BOOST_TEST(clock_behind_warning(s, std::chrono::seconds{3600}).empty(), "half of idle_cleanup is tolerated");
  s.local_time_ms += 1;
  const auto w = clock_behind_warning(s, std::chrono::seconds{3600});
  BOOST_TEST(w.find("1800 s behind the server's") != std::string::npos, w);
  s.local_time_ms = s.client_time_ms - 7'200'000;  // ahead: costs round trips, never order
  BOOST_TEST(clock_behind_warning(s, std::chrono::seconds{3600}).empty());
}

// Freeing by owner id (a waiter that gave up after being handed the lock; release_all) names the
// documents too: the owner field has no index, and an update_many on it alone scans the collection.
BOOST_AUTO_TEST_CASE(freeing_by_owner_looks_documents_up_by_id) {
  bson_t filter = BSON_INITIALIZER, change = BSON_INITIALIZER;
  ml::detail::build_release_owners({"jobs"}, {"a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"}, &filter, &change);
  BOOST_TEST(json(&filter) ==
             R"({ "_id" : { "$in" : [ "jobs" ] }, "owner" : { "$in" : [ "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1" ] } })");
  BOOST_TEST(json(&change).find(R"("owner" : null)") != std::string::npos);
  bson_destroy(&filter);
  bson_destroy(&change);
}

BOOST_AUTO_TEST_SUITE_END()
