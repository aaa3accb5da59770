#pragma once
// Shared plumbing for integration tests: the server URI, an io_context on two threads, and a
// way to run one coroutine to completion with a hard time limit.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mongolock.hpp"

namespace test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// A whole file (a child process's output, a journal); "" if it does not exist.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string server_dir() {
  const char* d = std::getenv("MONGOLOCK_TEST_SERVER_DIR");
  return d ? d : "";
}

// MONGOLOCK_TEST_URI wins; otherwise the server started by the ctest fixture.
inline std::string server_uri() {
  if (const char* u = std::getenv("MONGOLOCK_TEST_URI")) return u;
  const auto uri = read_file(server_dir() + "/uri");
  BOOST_REQUIRE_MESSAGE(!uri.empty(), "no server: set MONGOLOCK_TEST_URI or run through ctest");
  return uri;
}

inline std::string server_kind() {
  const auto k = read_file(server_dir() + "/kind");
  return k.empty() ? "external" : k;
}

inline std::string unique(const std::string& prefix) {
  static std::mt19937_64 rng(std::random_device{}());
  return prefix + "-" + std::to_string(rng() % 1000000000);
}

inline mongolock::lock_options fast_options(std::chrono::milliseconds expiry = 1000ms) {
  mongolock::lock_options o;
  o.expiry = expiry;
  o.backoff_min = 5ms;
  o.backoff_max = 50ms;
  return o;
}

struct io_fixture {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{io.get_executor()};
  std::vector<std::thread> threads;
  std::optional<mongolock::client> db;

  io_fixture() {
    for (int i = 0; i < 2; ++i) threads.emplace_back([this] { io.run(); });
    db.emplace(io.get_executor(), server_uri());
  }
  ~io_fixture() {
    db.reset();  // joins the worker pool while the io_context still runs
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
  }

  mongolock::provider make_provider(mongolock::lock_options o = fast_options(), std::string coll = "locks") {
    return mongolock::provider(*db, "mongolock_test", std::move(coll), o);
  }

  // Runs a coroutine on the io_context and waits for it, failing the test past `limit`.
  template <class T>
  T run(asio::awaitable<T> body, std::chrono::milliseconds limit = 30000ms) {
    // On a strand: timers and cancellation signals the test body creates are then serialised
    // with the operations they cancel, as Asio requires on a multi-threaded io_context.
    auto f = asio::co_spawn(asio::make_strand(io), std::move(body), asio::use_future);
    BOOST_REQUIRE_MESSAGE(f.wait_for(limit) == std::future_status::ready, "coroutine did not finish in time");
    return f.get();
  }
};

using clock = std::chrono::steady_clock;
inline long long ms_since(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t).count();
}

}  // namespace test
