// mongolock-model: the benchmark rows a server cannot give fairly (docs/benchmarks.md says
// which rows are counted, modelled or timed):
//   - counted: the commands and statements each operation sends, on the in-memory store below the
//     store seam (test/support/memory_store: the real store's filters, one call per command, plus
//     the read that judges a grouped command whose matched count is short). Deterministic; the
//     same cases are asserted exactly in engine_tests (command_count_suite).
//   - modelled: a lock per id across many server processes. 8 providers (8 processes: they share
//     no memory, only the store), 64 requests in flight each, each request the acquire and release
//     of one of 100,000 ids drawn Zipf (s = 1, then 0.8). The store answers every command after
//     a fixed latency (the model, below). Reported: commands and statements per request, and
//     documents per name used, counted; and the server time per request they cost under the
//     model, against the floor (one command per operation: 2 commands of one statement each).
// The emulator cannot give these: its update cost grows with the collection (72 ms at 2,000
// documents), so a timed row over 100,000 ids would measure it, not the lock.
//   mongolock-model [--out DIR] [--seconds S]
#include <boost/asio.hpp>
#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "engine/access.hpp"
#include "engine/provider_impl.hpp"
#include "memory_store.hpp"
#include "mongolock.hpp"
#include "zipf.hpp"

namespace {

namespace asio = boost::asio;
namespace ml = mongolock;
using namespace std::chrono_literals;
using bench::row;

// The latency model, assumed figures: every command is answered `per_command` after it arrives
// (0.3 ms: the emulator's own find at a small collection, measured with pymongo; a replica set
// acknowledging w: majority across hosts is slower). Its effect is applied at once; only the
// answer waits. Each statement of a command costs `per_statement` more (server work per document
// updated: 10 us, an assumption), which is not waited for in the run but added to the modelled
// wire time from the counts. That wire time is the sum over a request's commands, not what the
// request waited: concurrency, queueing and backoff are outside it. The ratio to the floor moves
// with the two figures, since the floor sends fewer statements per command.
constexpr auto per_command = std::chrono::microseconds{300};
constexpr auto per_statement = std::chrono::microseconds{10};

ml::lock_options options() {
  ml::lock_options o;
  o.expiry = 10s;  // the default's proportions, shorter: renewals every 3.3 s
  o.backoff_min = 5ms;
  o.backoff_max = 50ms;
  return o;
}

using wire = test::memory_store::wire_count;

struct world {
  asio::io_context io;
  std::shared_ptr<test::memory_store> store = std::make_shared<test::memory_store>(io.get_executor());
  std::shared_ptr<ml::detail::provider_impl> provider() {
    return std::make_shared<ml::detail::provider_impl>(io.get_executor(), store, options(), nullptr);
  }
  template <class T>
  T run(asio::awaitable<T> body) {
    auto f = asio::co_spawn(io, std::move(body), asio::use_future);
    while (f.wait_for(0s) != std::future_status::ready) io.run_one_for(5ms);
    return f.get();
  }
};

// ---- counted -------------------------------------------------------------------------------------

// One acquire and release of `name` through `p` (another provider of the same store is another
// process).
asio::awaitable<void> one_cycle(std::shared_ptr<ml::detail::provider_impl> p, std::string name) {
  auto l = co_await ml::detail::access::make_lock(p, name).async_acquire_for(5s, asio::use_awaitable);
  co_await l.async_release(asio::use_awaitable);
}

// `earlier`: what the earlier design sent for the same case (epoch tokens, plain-lock declarations,
// a per-provider memory of names), counted on the wire through the CLI and the code paths by the
// audit that preceded this design: for comparison only, not measured here.
void count_row(const std::string& what, const wire& before, const wire& after, double earlier) {
  bench::print(row{"counted: " + what}
                   .num("commands", static_cast<double>(after.commands - before.commands))
                   .num("statements", static_cast<double>(after.statements - before.statements))
                   .num("commands_earlier_design", earlier));
}

// A wait on permits that stay held elsewhere: its polls, counted. All `permits` are held by
// another provider; the waiting acquire (a semaphore's, or a writer's) looks every 40 ms (a
// fixed backoff, so a poll is a known instant) for 400 ms. Between its first reads and its
// deadline, every read of a permit is counted: reads per find is the commands one poll costs
// (docs/design.md section 10: one find of all the permits waited on; before, one read each).
// Before the first poll, the reads of the look and of the waits' first reads (section 10, the
// first reads go together; before, one read each).
void poll_row(const std::string& what, bool writer, int permits, int earlier, int earlier_first) {
  world w;
  auto o = options();
  o.backoff_min = o.backoff_max = 40ms;
  auto waiting = std::make_shared<ml::detail::provider_impl>(w.io.get_executor(), w.store, o, nullptr);
  auto holders = ml::detail::access::make_provider(w.provider());
  auto mine = ml::detail::access::make_provider(waiting);
  std::vector<ml::lease> held;
  ml::rw_options ro;
  ro.max_readers = permits;
  auto their_sem = holders.create_semaphore("poll", permits);
  auto their_rw = holders.create_rw_lock("poll-rw", ro);
  for (int i = 0; i < permits; ++i) {
    held.push_back(w.run([&]() -> asio::awaitable<ml::lease> {
      if (!writer) co_return co_await their_sem.async_acquire_for(5s, asio::use_awaitable);
      auto reader = their_rw.reader();  // named: GCC 12 and temporaries in co_await
      co_return co_await reader.async_acquire_for(5s, asio::use_awaitable);
    }()));
  }
  const auto from = w.store->calls().size();
  const auto start = ml::detail::steady_clock::now();  // the clock of the store's call records
  w.run([&]() -> asio::awaitable<void> {
    if (writer) {
      auto rw = mine.create_rw_lock("poll-rw", ro);
      auto v = rw.writer();
      auto [ec, l] = co_await v.async_acquire_for(400ms, asio::as_tuple(asio::use_awaitable));
      (void)ec;
    } else {
      auto sem = mine.create_semaphore("poll", permits);
      auto [ec, l] = co_await sem.async_acquire_for(400ms, asio::as_tuple(asio::use_awaitable));
      (void)ec;
    }
  }());
  // The polls: from 100 ms (after the look and each wait's first read) to 360 ms (before the
  // deadline, where the waits end one by one).
  const auto calls = w.store->calls();
  double finds = 0, reads = 0, first = 0;
  for (auto i = from; i < calls.size(); ++i) {
    const auto at = calls[i].at - start;
    const bool a_read = calls[i].what == test::op::read || calls[i].what == test::op::read_each;
    // The look's and the waits' first reads: before the first poll, 40 ms after them.
    if (at < 30ms && a_read) ++first;
    if (at < 100ms || at >= 360ms) continue;
    if (calls[i].what == test::op::read_each) ++finds;
    if (a_read) ++reads;
  }
  bench::print(row{"counted: " + what}
                   .num("polls", finds)
                   .num("commands_per_poll", finds > 0 ? reads / finds : reads)
                   .num("commands_per_poll_before", earlier)
                   .num("reads_before_the_first_poll", first)
                   .num("reads_before_the_first_poll_before", earlier_first));
  for (auto& l : held) w.run(l.async_release(asio::use_awaitable));
}

void counted() {
  poll_row("semaphore of 4, all held elsewhere: each poll of the waiting acquire", false, 4, 4, 6);
  poll_row("rw_lock writer (R = 16), every permit held by readers: each poll of its wait", true, 16, 16, 16);
  {
    world w;
    const auto b = w.store->wire();
    w.run(one_cycle(w.provider(), "new"));
    count_row("first use of a name (acquire + release)", b, w.store->wire(), 8);
  }
  {
    world w;
    w.run(one_cycle(w.provider(), "id"));
    const auto b = w.store->wire();
    w.run(one_cycle(w.provider(), "id"));
    count_row("released by another process (acquire + release)", b, w.store->wire(), 5);
  }
  {
    world w;
    auto holder = w.provider();
    auto held = w.run([&]() -> asio::awaitable<ml::lease> {
      co_return co_await ml::detail::access::make_lock(holder, "busy").async_acquire_for(5s, asio::use_awaitable);
    }());
    auto p = w.provider();
    const auto b = w.store->wire();
    w.run([&]() -> asio::awaitable<void> {
      auto [ec, l] = co_await ml::detail::access::make_lock(p, "busy").async_try_acquire(asio::as_tuple(asio::use_awaitable));
      (void)ec;
    }());
    count_row("try on a busy name", b, w.store->wire(), 4);
    w.run(held.async_release(asio::use_awaitable));
  }
  {
    world w;
    auto sem = ml::detail::access::make_provider(w.provider()).create_semaphore("sem", 4);
    for (int cycle = 0; cycle < 2; ++cycle) {
      const auto b = w.store->wire();
      w.run([&]() -> asio::awaitable<void> {
        auto l = co_await sem.async_acquire_for(5s, asio::use_awaitable);
        co_await l.async_release(asio::use_awaitable);
      }());
      count_row(cycle == 0 ? "semaphore of 4, a new object (acquire + release)" : "semaphore of 4, again", b,
                w.store->wire(), cycle == 0 ? 5 : 3);
    }
  }
  {
    world w;
    auto rw = ml::detail::access::make_provider(w.provider()).create_rw_lock("rw", {});
    const auto b = w.store->wire();
    w.run([&]() -> asio::awaitable<void> {
      auto writer = rw.writer();  // named: GCC 12 and temporaries in co_await
      auto l = co_await writer.async_acquire_for(5s, asio::use_awaitable);
      co_await l.async_release(asio::use_awaitable);
    }());
    count_row("rw_lock write (R = 16) from cold, new name", b, w.store->wire(), 88);
  }
  {
    world w;
    for (auto n : {"m1", "m2", "m3", "m4"}) w.run(one_cycle(w.provider(), n));
    auto set = ml::detail::access::make_provider(w.provider()).create_multi_lock({"m1", "m2", "m3", "m4"});
    const auto b = w.store->wire();
    w.run([&]() -> asio::awaitable<void> {
      auto l = co_await set.async_acquire_for(5s, asio::use_awaitable);
      co_await l.async_release(asio::use_awaitable);
    }());
    count_row("multi-lock of 4 from cold, released by another process", b, w.store->wire(), 16);
  }
}

// ---- modelled ------------------------------------------------------------------------------------

constexpr int providers = 8;
constexpr int in_flight = 64;
constexpr int ids = 100'000;

void modelled(double s, int seconds) {
  world w;
  w.store->set_latency(per_command);  // per statement: added below, from the counts
  std::vector<std::shared_ptr<ml::detail::provider_impl>> ps;
  for (int i = 0; i < providers; ++i) ps.push_back(w.provider());
  std::atomic<long> served{0}, failed{0};
  std::atomic<int> running{providers * in_flight};
  std::vector<bool> used(ids, false);
  const bench::zipf_table table(ids, s);  // one table for all requests
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (int i = 0; i < providers; ++i) {
    for (int r = 0; r < in_flight; ++r) {
      asio::co_spawn(w.io, [&, p = ps[static_cast<std::size_t>(i)], seed = std::uint64_t(i * in_flight + r)]() -> asio::awaitable<void> {
        std::mt19937_64 rng(seed + 1);
        while (std::chrono::steady_clock::now() < end) {
          const int id = table.draw(rng);
          used[static_cast<std::size_t>(id)] = true;
          auto [ec, l] = co_await ml::detail::access::make_lock(p, "id-" + std::to_string(id))
                             .async_acquire_for(10s, asio::as_tuple(asio::use_awaitable));
          if (ec) {
            ++failed;
            continue;
          }
          auto [rec] = co_await l.async_release(asio::as_tuple(asio::use_awaitable));
          if (rec) ++failed;
          else ++served;
        }
        --running;
      }, asio::detached);
    }
  }
  while (running > 0) w.io.run_one_for(5ms);
  const auto total = w.store->wire();
  // Every request's commands are counted, a failed one's too.
  const double requests = static_cast<double>(served.load() + failed.load());
  std::size_t names = 0;
  for (bool u : used) names += u;
  const double commands = static_cast<double>(total.commands) / requests;
  const double statements = static_cast<double>(total.statements) / requests;
  const double us = commands * static_cast<double>(per_command.count()) + statements * static_cast<double>(per_statement.count());
  const double floor_us = 2.0 * static_cast<double>(per_command.count() + per_statement.count());  // 2 commands, 1 statement each
  bench::print(row{"modelled: 8 providers x 64 in flight, 100,000 ids"}
                   .num("zipf_s", s).num("requests", requests).num("failed", static_cast<double>(failed.load()))
                   .num("commands_per_request", commands).num("statements_per_request", statements)
                   .num("documents_per_name", static_cast<double>(w.store->documents()) / static_cast<double>(names))
                   .num("modelled_wire_us_per_request", us).num("floor_modelled_wire_us_per_request", floor_us)
                   .num("ratio_to_floor", floor_us / us));
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = ".";
  int seconds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (k == "--out") out = next();
    else if (k == "--seconds") seconds = std::stoi(next());
    else { std::cerr << "unknown option " << k << "\n"; return 64; }
  }
  std::cout << "counted on the in-memory store (commands_earlier_design: the design before this one, for comparison)\n";
  counted();
  std::cout << "modelled (assumed figures): " << per_command.count() << " us a command, " << per_statement.count()
            << " us a statement, summed from the counts; the floor is 2 commands of one statement a request\n";
  for (double s : {1.0, 0.8}) modelled(s, seconds);
  std::ofstream json(out + "/model.json");
  json << "{\"rows\":[\n";
  for (std::size_t i = 0; i < bench::rows.size(); ++i) json << bench::rows[i].json() << (i + 1 < bench::rows.size() ? ",\n" : "\n");
  json << "]}\n";
  return 0;
}
