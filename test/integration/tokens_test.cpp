// Fencing tokens across a wiped collection (docs/design.md section 1): dropped, emptied by hand or
// restored, tokens must still stay above those a protected resource has already seen, or it
// rejects every new holder.
#include <mongoc/mongoc.h>

#include <thread>

#include "store/lock_store.hpp"
#include "fixture.hpp"

using namespace test;
namespace ml = mongolock;

namespace {

// One command on a test collection: delete_many(filter) or update_one(filter, change, upsert).
// The emulator has no `drop`; deleting every document is the same wipe for the lock.
void on_collection(const std::string& coll, const char* filter_json, const char* change_json = nullptr) {
  bson_error_t err;
  bson_t* filter = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(filter_json), -1, &err);
  BOOST_REQUIRE_MESSAGE(filter, err.message);
  mongoc_client_t* c = mongoc_client_new(server_uri().c_str());
  mongoc_collection_t* col = mongoc_client_get_collection(c, "mongolock_test", coll.c_str());
  bool ok = false;
  if (!change_json) {
    ok = mongoc_collection_delete_many(col, filter, nullptr, nullptr, &err);
  } else {
    bson_t* change = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(change_json), -1, &err);
    bson_t* opts = BCON_NEW("upsert", BCON_BOOL(true));
    ok = change && mongoc_collection_update_one(col, filter, change, opts, nullptr, &err);
    bson_destroy(opts);
    if (change) bson_destroy(change);
  }
  mongoc_collection_destroy(col);
  mongoc_client_destroy(c);
  bson_destroy(filter);
  BOOST_REQUIRE_MESSAGE(ok, err.message);
}

void wipe(const std::string& coll) { on_collection(coll, "{}"); }

std::int64_t clock_now() { return ml::detail::token_clock(std::chrono::system_clock::now()); }

// Acquires and releases `name` once; the token it had.
std::int64_t take_once(io_fixture& f, ml::provider& p, const std::string& name) {
  std::int64_t token = 0;
  f.run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire();
    token = l.fencing_token();
    co_await l.async_release();
  }());
  return token;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(tokens)

// A take writes at least the wall clock's reading in nanoseconds (docs/design.md section 1), so a
// life of the document after a wipe starts above the last one once the clock has moved past it:
// no counter is needed, and none is there to lose.
BOOST_FIXTURE_TEST_CASE(tokens_stay_above_a_wiped_collections_previous_life, io_fixture) {
  const auto coll = unique("wiped");
  const auto name = unique("fence");
  auto p = make_provider(fast_options(), coll);
  const auto before = clock_now();
  const auto first = take_once(*this, p, name);
  BOOST_TEST(first >= before, "the token is the clock's reading, not a count from 1");
  BOOST_TEST(first <= clock_now());
  wipe(coll);
  const auto second = take_once(*this, p, name);
  BOOST_TEST(second > first, "after the wipe: " << second << " vs " << first << " before");
}

// A lock document restored from a backup brings back an old token: the next take is above every
// token handed out since, not one above the restored one.
BOOST_FIXTURE_TEST_CASE(a_restored_lock_document_is_followed_by_a_token_above_every_later_one, io_fixture) {
  const auto coll = unique("restored");
  const auto name = unique("fence");
  auto p = make_provider(fast_options(), coll);
  const auto old = take_once(*this, p, name);
  const auto later = take_once(*this, p, name);
  BOOST_REQUIRE(later > old);
  const auto t = R"({"$numberLong": ")" + std::to_string(old) + R"("})";
  on_collection(coll, (R"({"_id": ")" + name + R"("})").c_str(), (R"({"$set": {"token": )" + t + "}}").c_str());
  const auto next = take_once(*this, p, name);
  BOOST_TEST(next > later, next << " vs " << later << " handed out before the restore");
}

// A life whose writers' clocks ran ahead of ours is the case the clock cannot cover; the
// recovery step of docs/design.md section 1 puts a free lock document back with the highest
// token the protected resources have seen. This runs exactly that command (its `updateOne`), far
// ahead of our clock: the next take goes one above it.
BOOST_FIXTURE_TEST_CASE(the_documented_recovery_step_restores_order_after_a_wipe, io_fixture) {
  const auto coll = unique("wiped");
  const auto name = unique("fence");
  auto p = make_provider(fast_options(), coll);
  const auto seen = clock_now() + std::int64_t{3600} * 1'000'000'000;
  const auto t = R"({"$numberLong": ")" + std::to_string(seen) + R"("})";
  on_collection(coll, (R"({"_id": ")" + name + R"("})").c_str(),
                (R"({"$set": {"owner": null, "token": )" + t + "}}").c_str());
  const auto next = take_once(*this, p, name);
  BOOST_TEST(next == seen + 1, next << " after the recovery step at " << seen);
}

BOOST_AUTO_TEST_SUITE_END()
