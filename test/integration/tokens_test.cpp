// Fencing tokens across a wiped collection (docs/design.md section 1): dropped, emptied by hand or
// restored, the collection loses its epoch counter, and tokens must still stay above those a
// protected resource has already seen, or it rejects every new holder.
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

std::int64_t epoch_of(std::int64_t token) { return token >> 32; }
std::int64_t clock_floor() { return ml::detail::epoch_floor(std::chrono::system_clock::now()); }

}  // namespace

BOOST_AUTO_TEST_SUITE(tokens)

// The epoch is seeded from a 10-second clock: a life that drew fewer than one epoch per 10 s
// (here: one) is below every epoch drawn after the clock has moved on. Before the seed, both
// lives started at 2^32 + 1.
BOOST_FIXTURE_TEST_CASE(tokens_stay_above_a_wiped_collections_previous_life, io_fixture) {
  const auto coll = unique("wiped");
  const auto name = unique("fence");
  auto p = make_provider(fast_options(), coll);
  const auto before = clock_floor();
  std::int64_t first = 0, second = 0;
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire();
    first = l.fencing_token();
    co_await l.async_release();
  }());
  BOOST_TEST(epoch_of(first) > before, "the first epoch is seeded from the clock, not 1");
  wipe(coll);
  // At most 10 s: the one limit of a coarse clock is a wipe within the unit of the last draw.
  while (clock_floor() < epoch_of(first)) std::this_thread::sleep_for(100ms);
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire();
    second = l.fencing_token();
    co_await l.async_release();
  }());
  BOOST_TEST(second > first, "after the wipe: " << second << " vs " << first << " before");
}

// A counter an older mongolock left small (it only ever incremented from 1) is raised to the
// clock by the next new document, so every document created from now on is covered.
BOOST_FIXTURE_TEST_CASE(an_old_small_counter_is_raised_to_the_clock, io_fixture) {
  const auto coll = unique("wiped");
  const auto name = unique("fence");
  auto p = make_provider(fast_options(), coll);
  on_collection(coll, R"({"_id": {"mongolock": "epoch"}})", R"({"$set": {"n": {"$numberLong": "5"}}})");
  const auto before = clock_floor();
  std::int64_t token = 0;
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire();
    token = l.fencing_token();
    co_await l.async_release();
  }());
  BOOST_TEST(epoch_of(token) > before, "epoch " << epoch_of(token) << " vs clock floor " << before);
}

// A previous life that drew epochs faster than the clock (its counter ran ahead) is the case the
// seed cannot cover; README's recovery step raises the counter by hand to the highest epoch the
// protected resources have seen. This runs exactly that command (README's `updateOne`).
BOOST_FIXTURE_TEST_CASE(the_documented_recovery_step_restores_order_after_a_wipe, io_fixture) {
  const auto coll = unique("wiped");
  const auto name = unique("fence");
  auto p = make_provider(fast_options(), coll);
  const auto ahead = clock_floor() + 1000;
  on_collection(coll, R"({"_id": {"mongolock": "epoch"}})",
                (R"({"$set": {"n": {"$numberLong": ")" + std::to_string(ahead) + R"("}}})").c_str());
  std::int64_t first = 0, second = 0;
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire();
    first = l.fencing_token();
    co_await l.async_release();
  }());
  BOOST_TEST(epoch_of(first) == ahead + 1, "a counter ahead of the clock is only incremented");
  wipe(coll);
  const auto e = R"({"$numberLong": ")" + std::to_string(epoch_of(first)) + R"("})";
  const auto filter = R"({"_id": {"mongolock": "epoch"}, "n": {"$lt": )" + e + "}}";
  on_collection(coll, filter.c_str(), (R"({"$set": {"n": )" + e + "}}").c_str());
  run([&]() -> asio::awaitable<void> {
    auto l = co_await p.create_lock(name).async_acquire();
    second = l.fencing_token();
    co_await l.async_release();
  }());
  BOOST_TEST(second > first, "after the recovery step: " << second << " vs " << first << " before");
}

BOOST_AUTO_TEST_SUITE_END()
