// ---- Scenario 10: the cost of fencing a write ---------------------------------------------------
// The same update of one document of a small collection (100 documents: the emulator's update cost
// grows with the collection, docs/benchmarks.md), fenced and unfenced, in the same run:
//  - counted: the commands each sends, through libmongoc's command monitoring, running the fenced
//    write's own blocking body (store/fence_commands.cpp, what the library's worker runs) on a
//    monitored client; for an applied write and for a refused one;
//  - timed: the unfenced update_one (the floor, libmongoc from this thread), the same body fenced
//    on the same thread, and the library's async_fenced_update end to end (io thread, worker
//    pool), alternating, medians of 3 rounds.
#include <mongoc/mongoc.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "direct.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "stats.hpp"
#include "store/fence_commands.hpp"

namespace bench {

namespace {

constexpr int documents = 100;
constexpr const char* database = "mongolock_bench";

std::atomic<long> commands_started{0};
void count_command(const mongoc_apm_command_started_t*) { ++commands_started; }

// A client whose every command is counted (libmongoc's command monitoring).
struct monitored {
  direct_conn conn;
  monitored(const config& c, const std::string& coll) : conn(c.uri, database, coll) {
    mongoc_apm_callbacks_t* cb = mongoc_apm_callbacks_new();
    mongoc_apm_set_command_started_cb(cb, count_command);
    mongoc_client_set_apm_callbacks(conn.client, cb, nullptr);
    mongoc_apm_callbacks_destroy(cb);
  }
};

std::string id_filter(int i) { return R"({"_id": )" + std::to_string(i) + "}"; }
constexpr const char* change = R"({"$inc": {"n": 1}})";

void fill(monitored& m) {
  for (int i = 0; i < documents; ++i) {
    bson_t* doc = BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT64(0));
    mongoc_collection_insert_one(m.conn.coll, doc, nullptr, nullptr, nullptr);
    bson_destroy(doc);
  }
}

bool plain_update(monitored& m, int i) {
  bson_t* filter = BCON_NEW("_id", BCON_INT32(i));
  bson_t* update = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
  const bool ok = mongoc_collection_update_one(m.conn.coll, filter, update, &m.conn.opts, nullptr, nullptr);
  bson_destroy(filter);
  bson_destroy(update);
  return ok;
}

mongolock::detail::fence_request fenced_request(const std::string& coll, std::int64_t token, int i) {
  mongolock::detail::fence_request r;
  r.database = database;
  r.collection = coll;
  r.token = token;
  r.items.push_back({mongolock::detail::fence_kind::update, {id_filter(i)}, {change}, false});
  return r;
}

bool fenced_update(monitored& m, const std::string& coll, std::int64_t token, int i) {
  return !mongolock::detail::fenced_write(m.conn.client, fenced_request(coll, token, i)).ec;
}

// Commands per write, `n` writes of `write`.
template <class Write>
double commands_per_write(int n, Write write) {
  const long before = commands_started;
  for (int i = 0; i < n; ++i) write(i % documents);
  return static_cast<double>(commands_started - before) / n;
}

// Writes per second of `write` over `seconds`; the latencies (µs) into `lat`.
template <class Write>
double rate(int seconds, Write write, std::vector<double>* lat = nullptr) {
  long n = 0;
  const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(seconds);
  std::mt19937 rng(7);
  while (std::chrono::steady_clock::now() < end) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!write(static_cast<int>(rng() % documents))) return 0;
    if (lat) lat->push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    ++n;
  }
  return n / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The library end to end: async_fenced_update from one coroutine on one io thread.
double library_rate(const config& c, const std::string& coll, std::int64_t token) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    const mongolock::fenced_collection where{database, coll};
    long n = 0;
    std::mt19937 rng(7);
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    while (std::chrono::steady_clock::now() < end) {
      const auto filter = id_filter(static_cast<int>(rng() % documents));
      co_await mongolock::async_fenced_update(db, token, where, filter, change);
      ++n;
    }
    co_return n / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

}  // namespace

void scenario_fence(const config& c) {
  const auto coll = fresh_collection("fence");
  monitored m(c, coll);
  fill(m);
  const std::int64_t token = 1'000'000;
  // Counted: applied writes, then refused ones (a token below the fence every write left).
  const double plain_cmds = commands_per_write(200, [&](int i) { return plain_update(m, i); });
  const double fenced_cmds = commands_per_write(200, [&](int i) { return fenced_update(m, coll, token, i); });
  const double refused_cmds = commands_per_write(200, [&](int i) { return fenced_update(m, coll, token - 1, i); });
  print(row{"10 fenced update, counted"}.num("documents", documents).num("unfenced_commands_per_write", plain_cmds)
            .num("fenced_commands_per_write", fenced_cmds).num("refused_commands_per_write", refused_cmds));
  // Timed: alternating, medians.
  std::vector<double> plain, fenced, library, plain_lat, fenced_lat;
  for (int r = 0; r < rounds; ++r) {
    plain.push_back(rate(c.seconds, [&](int i) { return plain_update(m, i); }, &plain_lat));
    fenced.push_back(rate(c.seconds, [&](int i) { return fenced_update(m, coll, token, i); }, &fenced_lat));
    library.push_back(library_rate(c, coll, token));
  }
  const auto med = [](const std::vector<double>& v) { return bench::percentile(v, .5); };
  print(row{"10 fenced update, timed"}.num("documents", documents).num("unfenced_per_s", med(plain))
            .num("unfenced_median_us", med(plain_lat)).num("fenced_per_s", med(fenced))
            .num("fenced_median_us", med(fenced_lat)).num("fenced_ratio", med(fenced) / med(plain))
            .num("library_per_s", med(library)).num("library_ratio", med(library) / med(plain)));
}

}  // namespace bench
