// ---- Scenario 10: the cost of fencing a write ---------------------------------------------------
// The same update of one document of a small collection (bench/fence_shapes.hpp), fenced and
// unfenced, in the same run:
//  - counted: the commands each sends, through libmongoc's command monitoring, running the fenced
//    write's own blocking body (store/fence_commands.cpp, what the library's worker runs) on a
//    monitored client; for an applied write and for a refused one;
//  - timed: the unfenced update_one (the unfenced floor, libmongoc from this thread), the fenced
//    command's exact shape from libmongoc the same way (the fenced floor: what the server charges
//    for the bigger filter and update), the library's blocking body on the same thread, and the
//    library's async_fenced_update end to end (io thread, worker pool); each round runs the four
//    in a rotated order, medians of 3 rounds.
//  Instructions per write (the client's side only) are counted by mongolock-fence-ir under
//  callgrind (bench/fence_instructions.cpp), not here.
#include <mongoc/mongoc.h>

#include <atomic>
#include <chrono>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common.hpp"
#include "direct.hpp"
#include "fence_shapes.hpp"
#include "mongolock.hpp"
#include "scenarios.hpp"
#include "stats.hpp"
#include "store/bson_util.hpp"

namespace bench {

namespace {

std::atomic<long> commands_started{0};
void count_command(const mongoc_apm_command_started_t*) { ++commands_started; }

// A client whose every command is counted (libmongoc's command monitoring).
struct monitored {
  direct_conn conn;
  monitored(const config& c, const std::string& coll) : conn(c.uri, fence_database, coll) {
    mongoc_apm_callbacks_t* cb = mongoc_apm_callbacks_new();
    mongoc_apm_set_command_started_cb(cb, count_command);
    mongoc_client_set_apm_callbacks(conn.client, cb, nullptr);
    mongoc_apm_callbacks_destroy(cb);
  }
};

// Commands per write, `n` writes of `write`.
template <class Write>
double commands_per_write(int n, Write write) {
  const long before = commands_started;
  for (int i = 0; i < n; ++i) write(i % fence_documents);
  return static_cast<double>(commands_started - before) / n;
}

// Writes per second of `write` over `seconds`; the latencies (µs) into `lat`.
template <class Write>
double rate(int seconds, Write write, std::vector<double>* lat) {
  long n = 0;
  const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(seconds);
  std::mt19937 rng(7);
  while (std::chrono::steady_clock::now() < end) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!write(static_cast<int>(rng() % fence_documents))) return 0;
    lat->push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    ++n;
  }
  return n / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The library end to end: async_fenced_update from one coroutine on one io thread.
double library_rate(const config& c, const std::string& coll, std::int64_t token) {
  return run_io<double>(c, [&](mongolock::client& db) -> asio::awaitable<double> {
    const mongolock::fenced_collection where{fence_database, coll};
    long n = 0;
    std::mt19937 rng(7);
    const auto start = std::chrono::steady_clock::now(), end = start + std::chrono::seconds(c.seconds);
    while (std::chrono::steady_clock::now() < end) {
      const auto filter = fence_id_filter(static_cast<int>(rng() % fence_documents));
      auto [ec, r] = co_await mongolock::async_fenced_update(db, token, where, filter, fence_change,
                                                            asio::as_tuple(asio::deferred));
      if (ec || r.matched != 1) co_return 0.0;
      ++n;
    }
    co_return n / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

}  // namespace

void scenario_fence(const config& c) {
  const auto coll = fresh_collection("fence");
  monitored m(c, coll);
  fence_fill(m.conn);
  // The collection handles a library worker keeps while it holds its connection (bson_util.hpp).
  const mongolock::detail::collection_cache worker_scope(m.conn.client);
  const std::int64_t token = 1'000'000;
  const auto body = [&](std::int64_t t) {
    return [&, t](int i) { return fenced_body_update(m.conn.client, coll, t, i); };
  };
  // Counted: applied writes, then refused ones (a token below the fence every write left).
  const double plain_cmds = commands_per_write(200, [&](int i) { return unfenced_update(m.conn, i); });
  const double floor_cmds = commands_per_write(200, [&](int i) { return fenced_shape_update(m.conn, token, i); });
  const double fenced_cmds = commands_per_write(200, body(token));
  const double refused_cmds = commands_per_write(200, body(token - 1));
  print(row{"10 fenced update, counted"}.num("documents", fence_documents)
            .num("unfenced_commands_per_write", plain_cmds)
            .num("fenced_floor_commands_per_write", floor_cmds).num("fenced_commands_per_write", fenced_cmds)
            .num("refused_commands_per_write", refused_cmds));
  // Timed: the four in a rotated order each round, so the emulator's drift (warm-up, its garbage
  // collection, the other work on the machine) falls on all four alike; ratios are taken within a
  // round (the four ran back to back) and their median over the rounds is reported, with the
  // smallest and largest. More rounds than elsewhere: one round's rates varied by half here.
  constexpr int fence_rounds = 7;
  enum { plain, fenced_floor, fenced, library, kinds };
  std::vector<double> per_s[kinds], lat[kinds];
  for (int r = 0; r < fence_rounds; ++r) {
    for (int k = 0; k < kinds; ++k) {
      switch ((r + k) % kinds) {
        case plain:
          per_s[plain].push_back(rate(c.seconds, [&](int i) { return unfenced_update(m.conn, i); }, &lat[plain]));
          break;
        case fenced_floor:
          per_s[fenced_floor].push_back(
              rate(c.seconds, [&](int i) { return fenced_shape_update(m.conn, token, i); }, &lat[fenced_floor]));
          break;
        case fenced:
          per_s[fenced].push_back(rate(c.seconds, body(token), &lat[fenced]));
          break;
        case library:
          per_s[library].push_back(library_rate(c, coll, token));
          break;
      }
    }
  }
  const auto med = [](const std::vector<double>& v) { return bench::percentile(v, .5); };
  const auto rounds_of = [](const std::vector<double>& v) {
    std::ostringstream s;
    for (double x : v) s << (s.tellp() > 0 ? " " : "") << static_cast<long>(x);
    return s.str();
  };
  // Per-round ratios: the library's fenced write to the unfenced update (fenced_ratio); the
  // emulator's charge for the fenced shape (floor_ratio: fenced floor to unfenced floor); the
  // library's blocking body and end to end to the fenced floor, the share that is the library's
  // (docs/benchmarks.md, scenario 10).
  row out{"10 fenced update, timed"};
  out.num("documents", fence_documents).num("rounds", fence_rounds);
  const auto ratio = [&](const char* name, int a, int b) {
    std::vector<double> v;
    for (int r = 0; r < fence_rounds; ++r) v.push_back(per_s[a][r] / per_s[b][r]);
    out.num(name, med(v)).num(std::string(name) + "_min", bench::percentile(v, 0))
        .num(std::string(name) + "_max", bench::percentile(v, 1));
  };
  out.num("unfenced_per_s", med(per_s[plain])).num("unfenced_median_us", med(lat[plain]))
      .num("fenced_floor_per_s", med(per_s[fenced_floor])).num("fenced_floor_median_us", med(lat[fenced_floor]))
      .num("fenced_per_s", med(per_s[fenced])).num("fenced_median_us", med(lat[fenced]))
      .num("library_per_s", med(per_s[library]));
  ratio("fenced_ratio", fenced, plain);
  ratio("floor_ratio", fenced_floor, plain);
  ratio("fenced_to_floor", fenced, fenced_floor);
  ratio("library_ratio", library, plain);
  ratio("library_to_floor", library, fenced_floor);
  out.str("unfenced_rounds", rounds_of(per_s[plain])).str("fenced_floor_rounds", rounds_of(per_s[fenced_floor]))
      .str("fenced_rounds", rounds_of(per_s[fenced])).str("library_rounds", rounds_of(per_s[library]));
  print(out);
}

}  // namespace bench
