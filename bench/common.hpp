#pragma once
// What every scenario of the benchmark shares: its configuration, the printed rows, names and
// collections of its own for each measurement, an io_context to run a coroutine on, and the
// pairing of library and floor rounds.
#include <boost/asio.hpp>
#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "mongolock.hpp"
#include "stats.hpp"

namespace bench {

namespace asio = boost::asio;

struct config {
  std::string uri, out = ".", kind = "unknown", self;
  std::string only = "123456789f";  // which scenarios to run ('f': 10, fenced writes)
  std::string peer;            // built DistributedLock.MongoDB harness (a .dll run with dotnet), if any
  int seconds = 3;
};

// Every row print() has shown, in order: main() writes them to results.json.
extern std::vector<row> rows;

// Prints a row of the table and keeps it in `rows`.
void print(const row& r);

// `p` followed by this process's id and the clock's last digits: a lock name of this run's own.
std::string unique(const std::string& p);

// Every measurement gets a collection of its own. On the jongodb emulator an update costs time
// proportional to the collection's size (0.8 ms at 100 documents, 17 ms at 1,100, 436 ms at
// 6,100), so a shared, growing collection would measure the emulator, not the lock. On MongoDB
// (an _id index) it makes no difference.
std::string fresh_collection(const std::string& label);

// Runs fn on an io_context with one thread (as a typical server would), returns its result.
template <class T>
T run_io(const config& c, std::function<asio::awaitable<T>(mongolock::client&)> fn) {
  asio::io_context io;
  mongolock::client db(io.get_executor(), c.uri);
  auto f = asio::co_spawn(io, fn(db), asio::use_future);
  io.run();
  return f.get();
}

// Polls every 10 ms until `n` (coroutines still running) reaches zero.
asio::awaitable<void> until_zero(const std::atomic<int>& n);

// Library and floor alternate, `rounds` times each, and the medians are compared: the server's
// own drift (warm-up, garbage collection in the emulator) then hits both sides alike.
struct paired {
  std::vector<double> lib, floor;
  double lib_median() const { return bench::percentile(lib, .5); }
  double floor_median() const { return bench::percentile(floor, .5); }
};
constexpr int rounds = 3;

}  // namespace bench
