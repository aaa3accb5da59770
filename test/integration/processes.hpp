#pragma once
// Child processes for the multi-process suites (process, clock_rates): a worker started with its
// output in a file, optionally under libfaketime, killed and reaped when the test ends.
#include <fcntl.h>
#include <sys/file.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "fixture.hpp"

extern "C" char** environ;  // NOLINT: POSIX

namespace test {

namespace fs = std::filesystem;

inline constexpr const char* libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

// The path of a program ctest built, from the variable ctest sets (test/CMakeLists.txt).
inline std::string program_path(const char* variable) {
  const char* path = std::getenv(variable);
  BOOST_REQUIRE_MESSAGE(path, variable << " is not set (run through ctest)");
  return path;
}

inline std::string worker_path() { return program_path("MONGOLOCK_WORKER"); }

struct child {
  pid_t pid = -1;
  fs::path out;

  // Starts `argv` with stdout+stderr in a file; with `faketime`, its clocks are shifted by that
  // offset through libfaketime (preloaded directly: the faketime(1) wrapper forks, and a signal
  // to it would not reach the worker).
  child(std::vector<std::string> argv, fs::path output, const std::string& faketime = "") : out(std::move(output)) {
    // Everything is built before fork: the test process has threads (the driver's, the
    // provider's), so the child may only make async-signal-safe calls until exec. An allocation
    // there (setenv, a vector) can deadlock on a lock another thread held at fork: a worker
    // that never started once left an empty output file and a 10 s timeout under ASan in CI.
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string_view v(*e);
      const bool replaced = v.starts_with("LD_PRELOAD=") || v.starts_with("FAKETIME=") || v.starts_with("ASAN_OPTIONS=");
      if (faketime.empty() || !replaced) env.emplace_back(v);
    }
    if (!faketime.empty()) {
      env.push_back(std::string("LD_PRELOAD=") + libfaketime);
      env.push_back("FAKETIME=" + faketime);
      // Under AddressSanitizer the preloaded library would otherwise come before ASan's runtime.
      env.push_back("ASAN_OPTIONS=verify_asan_link_order=0");
    }
    std::vector<char*> args, envp;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string path = out.string();
    pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(args[0], args.data(), envp.data());  // argv[0] is always a path (program_path)
      ::_exit(127);
    }
  }
  ~child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  bool wait_for_text(const std::string& text, std::chrono::milliseconds limit) const {
    const auto t0 = clock::now();
    while (clock::now() - t0 < limit) {
      if (slurp(out).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  int wait_exit() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  child(const child&) = delete;
  // False once it has exited (its status is then kept for wait_exit_for).
  bool running() {
    if (pid <= 0) return false;
    const pid_t r = ::waitpid(pid, &status_, WNOHANG);
    if (r == 0) return true;
    if (r < 0) unknown_ = true;  // not our child (any more): no status to report
    pid = -1;
    return false;
  }
  // The exit status, -1 if it is still running after `limit` (the destructor then kills it), -2
  // if it was reaped elsewhere.
  int wait_exit_for(std::chrono::milliseconds limit) {
    const auto t0 = clock::now();
    while (running()) {
      if (clock::now() - t0 >= limit) return -1;
      std::this_thread::sleep_for(10ms);
    }
    if (unknown_) return -2;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }

 private:
  int status_ = 0;
  bool unknown_ = false;
};

inline fs::path scratch(const std::string& name) {
  auto d = fs::temp_directory_path() / ("mongolock-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A worker on `name`; with name_flag "--names", on a comma-separated set (a multi-lock).
inline std::vector<std::string> worker_args(const std::string& name, const fs::path& dir, std::vector<std::string> extra,
                                            const char* name_flag = "--name") {
  std::vector<std::string> a{worker_path(), "--uri", server_uri(), "--db", "mongolock_test", name_flag, name,
                             "--dir", dir.string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

inline bool have_faketime() { return ::access(libfaketime, R_OK) == 0; }

// A FAKETIME offset about `hours` behind, but never further back than this machine's
// CLOCK_MONOTONIC minus a minute. Asio arms its timerfd at the absolute instant 1 ns when a timer
// is already due, and libfaketime moves absolute instants by the offset: an offset further back
// than the monotonic clock puts that instant in the future, and no timer of the process fires
// again (timer_probe.cpp; seen as a reader that never acquired on a machine up for under 3 h).
inline long long behind_seconds(int hours) {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::max<long long>(0, std::min<long long>(hours * 3600LL, ts.tv_sec - 60));
}
inline std::string behind(int hours) {
  const long long seconds = behind_seconds(hours);
  if (seconds < hours * 3600LL) BOOST_TEST_MESSAGE("this machine has been up for less than " << hours << " h: 'behind' is " << seconds << " s");
  return seconds > 0 ? "-" + std::to_string(seconds) : "+0";
}

// For the clock-skew tests: true (and says so) when they cannot run here.
inline bool skip_without_faketime() {
  if (have_faketime()) return false;
  BOOST_TEST_MESSAGE("skipped: faketime is not installed (scripts/install-deps.sh installs it)");
  return true;
}

// The token (or term) a fencing-checked resource file holds.
// A resource file's token, read under a shared flock: its writers (examples/fenced_file.hpp)
// truncate and rewrite it under an exclusive one, and a read between the two would see it empty.
inline std::int64_t read_token(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ::flock(fd, LOCK_SH);
  char buf[64] = {};
  const auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  return n > 0 ? std::atoll(buf) : 0;
}

// Writes `token` to a resource file, as its new holder.
inline void write_resource(const fs::path& p, std::int64_t token) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_TRUNC | O_CREAT, 0644);
  const auto text = std::to_string(token) + "\n";
  BOOST_TEST(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
}

// The tokens of a worker journal ("token pid" lines), in the order written.
inline std::vector<std::int64_t> journal_tokens(const fs::path& p) {
  std::istringstream journal(slurp(p));
  std::vector<std::int64_t> tokens;
  std::int64_t t;
  long pid;
  while (journal >> t >> pid) tokens.push_back(t);
  return tokens;
}

// Clocks off by hours change nothing (docs/design.md section 2), for a lock, a permit or a set
// alike: a worker whose clock runs 5 h ahead (`ahead`: its arguments, it holds until killed) keeps
// what it holds against our acquire of 2.5 s (`try_for`: an awaitable of tuple<error_code, Held>,
// errc::timeout); once it is killed, our acquire of 10 s (`take_for`: an awaitable of Held) gets
// it after its expiry, and a worker 3 h behind (`behind_args`) does not get it until we release.
template <class TryFor, class TakeFor>
void clocks_off_by_hours_change_nothing(io_fixture& f, const fs::path& dir, const std::vector<std::string>& ahead,
                                        const std::vector<std::string>& behind_args, TryFor try_for, TakeFor take_for) {
  {
    child holder(ahead, dir / "ahead", "+5h");
    BOOST_REQUIRE_MESSAGE(holder.wait_for_text("acquired", 10s), slurp(dir / "ahead"));
    auto [ec, ignored] = f.run(try_for(2500ms));
    BOOST_TEST((ec == mongolock::errc::timeout), "a skewed live holder must not be taken over");
  }  // killed here
  f.run([&]() -> asio::awaitable<void> {
    auto held = co_await take_for(10000ms);  // after the killed one expires
    child waiter(behind_args, dir / "behind", behind(3));
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer t(ex, 2500ms);
    co_await t.async_wait(asio::deferred);
    BOOST_TEST(slurp(dir / "behind").find("acquired") == std::string::npos, slurp(dir / "behind"));
    co_await held.async_release();
    BOOST_TEST(waiter.wait_for_text("released", 5s), slurp(dir / "behind"));
  }());
}

// A holder paused past its lease is cancelled when it resumes (docs/design.md section 2): the
// worker (`args`: it holds until killed, its output in `dir`/out) is stopped once it holds; our
// `take_for(10 s)` (an awaitable of Held) gets what it held after its expiry, `on_taken(held)`
// runs (writes the resource with our token), the worker resumes, and 1.5 s later we still hold
// it; the worker then says LOST and exits 3. The caller checks the resource.
template <class TakeFor, class OnTaken>
void a_stopped_holder_resumes_to_a_lost_lease(io_fixture& f, const fs::path& dir, const std::vector<std::string>& args,
                                              TakeFor take_for, OnTaken on_taken) {
  child holder(args, dir / "out");
  BOOST_REQUIRE_MESSAGE(holder.wait_for_text("acquired", 10s), slurp(dir / "out"));
  ::kill(holder.pid, SIGSTOP);
  f.run([&]() -> asio::awaitable<void> {
    auto held = co_await take_for(10000ms);
    on_taken(held);
    ::kill(holder.pid, SIGCONT);
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer t(ex, 1500ms);
    co_await t.async_wait(asio::deferred);  // the old holder runs again meanwhile
    BOOST_TEST(held.held());
    co_await held.async_release();
  }());
  BOOST_TEST(holder.wait_for_text("LOST", 5s), slurp(dir / "out"));
  BOOST_TEST(holder.wait_exit() == 3);
}

}  // namespace test
