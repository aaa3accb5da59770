// ---- Scenario 10: the cost of fencing a write ---------------------------------------------------
// The same update of one document of a small collection (bench/fence_shapes.hpp), fenced and
// unfenced, in the same run:
//  - counted: the commands each sends, through libmongoc's command monitoring, running the fenced
//    write's own blocking body (store/fence_commands.cpp, what the library's worker runs) on a
//    monitored client; for an applied write and for a refused one;
//  - timed: the unfenced update_one (the unfenced floor, libmongoc from this thread), the fenced
//    command's exact shape from libmongoc the same way (the fenced floor: what the server charges
//    for the bigger filter and update), the library's blocking body on the same thread, and the
//    library's async_fenced_update end to end (io thread, worker pool); interleaved in slices of
//    50 writes, ratios within each of 7 rounds, their median, smallest and largest.
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
  // Timed: the four interleaved in slices of `slice` writes, in a rotated order, so that the
  // machine's and the emulator's drift (warm-up, its garbage collection, other work on the 2
  // shared cores, which changed rates by half from one second to the next) falls on all four
  // alike. A kind's rate in a round is its writes over the time spent in its own slices; ratios
  // are taken within a round, and their median over the rounds is reported with the smallest and
  // largest. All from one coroutine on one io thread: the blocking kinds block it, as they would
  // any caller's thread, and the library's write is co_awaited (its worker pool, the hop back).
  // On a client of their own, without the command monitoring that counted the rows above: libmongoc
  // builds an event for every monitored command, a cost the library's own pool never pays, so the
  // floors would be slowed and the end-to-end row flattered against them.
  direct_conn timed(c.uri, fence_database, coll);
  const mongolock::detail::collection_cache timed_scope(timed.client);
  constexpr int fence_rounds = 7, slice = 50;
  enum { plain, fenced_floor, fenced, library, kinds };
  std::vector<double> per_s[kinds], lat[kinds];
  const bool all_written = run_io<bool>(c, [&](mongolock::client& db) -> asio::awaitable<bool> {
    using clock = std::chrono::steady_clock;
    const mongolock::fenced_collection where{fence_database, coll};
    std::mt19937 rng(7);
    for (int r = 0; r < fence_rounds; ++r) {
      std::chrono::duration<double> spent[kinds]{};
      long written[kinds]{};
      const auto round_end = clock::now() + std::chrono::seconds(c.seconds) * kinds;
      for (int s = 0; clock::now() < round_end; ++s) {
        for (int k = 0; k < kinds; ++k) {
          const int kind = (s + k) % kinds;
          const auto slice_start = clock::now();
          for (int j = 0; j < slice; ++j) {
            const int i = static_cast<int>(rng() % fence_documents);
            const auto t0 = clock::now();
            bool ok = false;
            switch (kind) {
              case plain:
                ok = unfenced_update(timed, i);
                break;
              case fenced_floor:
                ok = fenced_shape_update(timed, token, i);
                break;
              case fenced:
                ok = fenced_body_update(timed.client, coll, token, i);
                break;
              case library: {
                const auto filter = fence_id_filter(i);
                auto [ec, res] = co_await mongolock::async_fenced_update(db, token, where, filter, fence_change,
                                                                        asio::as_tuple(asio::deferred));
                ok = !ec && res.matched == 1;
                break;
              }
            }
            if (!ok) co_return false;
            lat[kind].push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count());
          }
          spent[kind] += clock::now() - slice_start;
          written[kind] += slice;
        }
      }
      for (int k = 0; k < kinds; ++k) per_s[k].push_back(static_cast<double>(written[k]) / spent[k].count());
    }
    co_return true;
  });
  if (!all_written) {
    print(row{"10 fenced update, timed"}.str("error", "a write failed or matched nothing"));
    return;
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
