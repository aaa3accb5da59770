// Scenario 10's counted instructions: a fixed number of writes of one kind, for callgrind, which
// counts the instructions this process runs (the server's are its own):
//
//   valgrind --tool=callgrind --separate-threads=yes mongolock-fence-ir --uri URI --mode M --writes N
//
// (Ir at 2,000 writes - Ir at 1,000) / 1,000 is the client's cost of one write, start-up
// cancelled. Modes, the same documents and updates as scenario_fence.cpp:
//   plain         the unfenced update, bare libmongoc (its filter and update built with BCON)
//   plain-floor   the fenced command's shape, bare libmongoc (BCON): the fenced write's floor
//   body          the library's blocking body (store/fence_commands.cpp) from JSON text
//   async         async_fenced_update end to end (io thread, worker pool)
//   build         no server: only the library's parse and build of the fenced command (the
//                 client-side work the body adds before sending), timed, ns per write printed
#include <mongoc/mongoc.h>

#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "direct.hpp"
#include "fence_shapes.hpp"
#include "mongolock.hpp"
#include "store/bson_util.hpp"
#include "store/fence_commands.hpp"

namespace asio = boost::asio;

int main(int argc, char** argv) {
  std::string uri, mode;
  int writes = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--uri") uri = argv[i + 1];
    else if (k == "--mode") mode = argv[i + 1];
    else if (k == "--writes") writes = std::atoi(argv[i + 1]);
  }
  if (uri.empty() || mode.empty()) {
    std::fprintf(stderr, "usage: mongolock-fence-ir --uri URI --mode plain|plain-floor|body|async --writes N\n");
    return 64;
  }
  mongoc_init();
  if (mode == "build") {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < writes; ++i) {
      const mongolock::detail::fence_item item{mongolock::detail::fence_kind::update,
                                               {bench::fence_id_filter(i % bench::fence_documents)},
                                               {bench::fence_change}, false};
      mongolock::detail::fence_command cmd;
      std::string why;
      if (mongolock::detail::build_fence_command(item, "fence", 1'000'000, cmd, &why)) return 1;
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    std::printf("build %d writes, %.0f ns a write\n", writes, took.count() / writes);
    mongoc_cleanup();
    return 0;
  }
  const std::string coll = "fence_ir_" + mode + "_" + std::to_string(writes);
  const std::int64_t token = 1'000'000;
  int failed = 0;
  {
    bench::direct_conn conn(uri, bench::fence_database, coll);
    mongoc_collection_drop(conn.coll, nullptr);
    bench::fence_fill(conn);
    if (mode == "plain" || mode == "plain-floor" || mode == "body") {
      // As a library worker runs the body: its collection handles kept (store/bson_util.hpp).
      const mongolock::detail::collection_cache worker_scope(conn.client);
      for (int i = 0; i < writes; ++i) {
        const int d = i % bench::fence_documents;
        const bool ok = mode == "plain"         ? bench::unfenced_update(conn, d)
                        : mode == "plain-floor" ? bench::fenced_shape_update(conn, token, d)
                                                : bench::fenced_body_update(conn.client, coll, token, d);
        failed += !ok;
      }
    } else if (mode == "async") {
      asio::io_context io;
      mongolock::client db(io.get_executor(), uri);
      asio::co_spawn(
          io,
          [&]() -> asio::awaitable<void> {
            const mongolock::fenced_collection where{bench::fence_database, coll};
            for (int i = 0; i < writes; ++i) {
              const auto filter = bench::fence_id_filter(i % bench::fence_documents);
              auto [ec, r] = co_await mongolock::async_fenced_update(db, token, where, filter, bench::fence_change,
                                                                     asio::as_tuple(asio::deferred));
              failed += ec || r.matched != 1;
            }
          },
          asio::detached);
      io.run();
    } else {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 64;
    }
    mongoc_collection_drop(conn.coll, nullptr);
  }
  mongoc_cleanup();
  std::printf("%s %d writes, %d failed\n", mode.c_str(), writes, failed);
  return failed ? 1 : 0;
}
