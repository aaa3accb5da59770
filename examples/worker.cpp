// mongolock-worker: one process contending for a named lock. The demo runs several of these;
// the multi-process tests use it too. Each critical section
//   - creates a marker file with O_EXCL (a second holder at the same time would fail: OVERLAP),
//   - appends "token pid" to a journal (the file order is the order of acquisitions),
//   - writes through a fencing-token-checking "resource" file (rejects tokens below the max seen).
//
//   mongolock-worker --uri URI --name NAME [--count N] [--hold-ms H] [--expiry-ms E]
//                    [--margin-ms M] [--backoff-max-ms B] [--dir DIR] [--forever] [--quiet]
//   --names A,B,...  instead of --name: all of them at once (a multi-lock); each name then has
//                    its own marker, journal and resource (in-critical-section-A, journal-A, ...).
//   --permits N      a permit of the semaphore NAME of N permits; each permit has its own marker,
//                    journal and resource (in-critical-section-NAME#k, ...), and a holder-PID file
//                    counts the holders: more than N at once prints OVERLAP.
//   --read | --write the rw_lock NAME (--readers R, default 4): a reader makes reader-PID, a
//                    writer writer; a reader beside a writer prints OVERLAP. Writers write the
//                    resource and journal with multi_lease::highest_fencing_token().
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "fenced_file.hpp"
#include "mongolock.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct args {
  std::string uri = "mongodb://127.0.0.1:27017", name = "demo", dir = ".", db = "mongolock_demo", coll = "locks";
  std::vector<std::string> names;  // --names: a multi-lock
  int permits = 0;                 // --permits: a semaphore
  std::string rw;                  // --read / --write: a rw_lock
  int readers = 4;
  int count = 3, hold_ms = 100, expiry_ms = 5000, margin_ms = 0, backoff_max_ms = 0;  // 0: the defaults
  bool forever = false, quiet = false;
};

void say(const std::string& line) { examples::say("worker", line); }

// Through the fencing-checked resource (fenced_file.hpp); a refusal is printed.
bool fenced_write(const std::string& path, std::int64_t token) {
  return examples::fenced_write("worker", path, "token", token);
}

void journal(const std::string& path, std::int64_t token) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  const auto text = std::to_string(token) + " " + std::to_string(getpid()) + "\n";
  if (fd >= 0 && ::write(fd, text.data(), text.size()) < 0) say("journal write failed");
  if (fd >= 0) ::close(fd);
}

// One lock's share of a critical section: its fencing token and the suffix of its files.
struct held_name {
  std::string suffix;  // "" for a single lock, "-NAME" for each name of a multi-lock
  std::int64_t token;
};

// Files in `dir` whose names start with `prefix`.
int count_files(const std::string& dir, const std::string& prefix) {
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir))
    n += f.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

// The marker of a holder that shares the critical section (a semaphore's holders, a rw_lock's
// readers and writer), and the check that nobody is inside who must not be: made on entry.
std::string enter_shared(const args& a) {
  const std::string mine = a.dir + "/" + (a.rw == "write" ? std::string("writer") : (a.rw == "read" ? "reader-" : "holder-") + std::to_string(getpid()));
  if (a.permits == 0 && a.rw.empty()) return {};
  const int fd = ::open(mine.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) say("OVERLAP: another writer is inside");
  else ::close(fd);
  if (a.permits > 0 && count_files(a.dir, "holder-") > a.permits)
    say("OVERLAP: more than " + std::to_string(a.permits) + " holders inside");
  if (a.rw == "read" && count_files(a.dir, "writer") > 0) say("OVERLAP: a reader beside a writer");
  if (a.rw == "write" && count_files(a.dir, "reader-") > 0) say("OVERLAP: a writer beside a reader");
  return fd < 0 ? std::string() : mine;
}

// The critical section: runs under the lease's (or multi-lease's) guard, so losing the lease
// cancels it.
asio::awaitable<void> critical_section(const args& a, std::vector<held_name> held) {
  std::vector<std::string> markers;
  if (auto shared = enter_shared(a); !shared.empty()) markers.push_back(shared);
  for (const auto& h : held) {
    const std::string marker = a.dir + "/in-critical-section" + h.suffix;
    const int fd = ::open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) say("OVERLAP: another holder is inside the critical section" + h.suffix);
    else ::close(fd), markers.push_back(marker);
    journal(a.dir + "/journal" + h.suffix, h.token);
  }
  asio::steady_timer t(co_await asio::this_coro::executor);
  const int rounds = a.forever ? 1 << 30 : 1;
  for (int i = 0; i < rounds; ++i) {
    for (const auto& h : held) fenced_write(a.dir + "/resource" + h.suffix, h.token);
    t.expires_after(a.forever ? 50ms : std::chrono::milliseconds(a.hold_ms));
    co_await t.async_wait(asio::deferred);  // throws operation_aborted when the lease is lost
  }
  for (const auto& m : markers) ::unlink(m.c_str());
}

void unlink_markers(const args& a, const std::vector<held_name>& held) {
  for (const auto& h : held) ::unlink((a.dir + "/in-critical-section" + h.suffix).c_str());
  if (a.rw == "write") ::unlink((a.dir + "/writer").c_str());
  if (a.rw == "read") ::unlink((a.dir + "/reader-" + std::to_string(getpid())).c_str());
  if (a.permits > 0) ::unlink((a.dir + "/holder-" + std::to_string(getpid())).c_str());
}

std::string wallclock() {
  // Printed only so that clock-skew tests can see the skew took effect; the lock never reads it.
  return std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// Acquires, runs the critical section under the guard and releases: 0, or the exit code.
template <class Lock>
asio::awaitable<int> one_round(const args& a, Lock& lock) {
  auto [ec, lease] = co_await lock.async_acquire(asio::as_tuple(asio::deferred));
  if (ec) {
    say("ERROR acquiring: " + ec.message());
    co_return 2;
  }
  std::vector<held_name> held;
  std::string tokens;
  if constexpr (std::is_same_v<decltype(lease), mongolock::lease>) {
    // A permit has files of its own; a reader writes nothing.
    if (a.permits > 0) held.push_back({"-" + lease.name(), lease.fencing_token()});
    else if (a.rw.empty()) held.push_back({"", lease.fencing_token()});
    tokens = (a.permits > 0 || !a.rw.empty() ? lease.name() + ":" : "") + std::to_string(lease.fencing_token());
  } else if (a.rw == "write") {
    held.push_back({"", lease.highest_fencing_token()});
    tokens = std::to_string(lease.highest_fencing_token());
  } else {
    for (const auto& l : lease.leases()) {
      held.push_back({"-" + l.name(), l.fencing_token()});
      tokens += (tokens.empty() ? "" : ",") + l.name() + ":" + std::to_string(l.fencing_token());
    }
  }
  say("acquired token=" + tokens + " wallclock=" + wallclock());
  try {
    auto guarded = lease.async_guard(critical_section(a, held));  // named: GCC 12 and temporaries
    co_await std::move(guarded);
  } catch (const boost::system::system_error& e) {
    say(std::string("LOST: ") + e.code().message());
    unlink_markers(a, held);
    co_return 3;
  }
  auto rel = co_await lease.async_release(asio::as_tuple(asio::deferred));
  say("released" + (std::get<0>(rel) ? " (" + std::get<0>(rel).message() + ")" : std::string()));
  co_return 0;
}

asio::awaitable<int> run(const args& a) {
  auto ex = co_await asio::this_coro::executor;
  mongolock::client db(ex, a.uri);
  mongolock::lock_options opts;
  opts.expiry = std::chrono::milliseconds(a.expiry_ms);
  opts.safety_margin = std::chrono::milliseconds(a.margin_ms);
  if (a.backoff_max_ms > 0) opts.backoff_max = std::chrono::milliseconds(a.backoff_max_ms);
  mongolock::provider locks(db, a.db, a.coll, opts);
  auto lock = locks.create_lock(a.name);
  auto multi = locks.create_multi_lock(a.names);
  auto permits = locks.create_semaphore(a.name, a.permits);
  mongolock::rw_options rwo;
  rwo.max_readers = a.readers;
  auto rw = locks.create_rw_lock(a.name, rwo);
  auto reader = rw.reader();  // the rw_lock's two sides, each with the acquire set
  auto writer = rw.writer();
  for (int i = 0; i < a.count; ++i) {
    // Named, not temporaries inside co_await: GCC 12 may destroy those twice.
    int rc = 0;
    if (!a.names.empty()) {
      auto round = one_round(a, multi);
      rc = co_await std::move(round);
    } else if (a.permits > 0) {
      auto round = one_round(a, permits);
      rc = co_await std::move(round);
    } else if (a.rw == "read") {
      auto round = one_round(a, reader);
      rc = co_await std::move(round);
    } else if (a.rw == "write") {
      auto round = one_round(a, writer);
      rc = co_await std::move(round);
    } else {
      auto round = one_round(a, lock);
      rc = co_await std::move(round);
    }
    if (rc != 0) co_return rc;
  }
  co_return 0;
}

}  // namespace

int main(int argc, char** argv) {
  args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::cerr << "missing value for " << k << "\n"; std::exit(64); }
      return argv[++i];
    };
    if (k == "--uri") a.uri = next();
    else if (k == "--name") a.name = next();
    else if (k == "--names") {
      std::string list = next();
      for (std::size_t at = 0; at <= list.size();) {
        const auto comma = std::min(list.find(',', at), list.size());
        a.names.push_back(list.substr(at, comma - at));
        at = comma + 1;
      }
    }
    else if (k == "--permits") a.permits = std::stoi(next());
    else if (k == "--read") a.rw = "read";
    else if (k == "--write") a.rw = "write";
    else if (k == "--readers") a.readers = std::stoi(next());
    else if (k == "--dir") a.dir = next();
    else if (k == "--db") a.db = next();
    else if (k == "--count") a.count = std::stoi(next());
    else if (k == "--hold-ms") a.hold_ms = std::stoi(next());
    else if (k == "--expiry-ms") a.expiry_ms = std::stoi(next());
    else if (k == "--margin-ms") a.margin_ms = std::stoi(next());
    else if (k == "--backoff-max-ms") a.backoff_max_ms = std::stoi(next());
    else if (k == "--forever") a.forever = true, a.count = 1;
    else { std::cerr << "unknown option " << k << "\n"; return 64; }
  }
  asio::io_context io;
  int rc = 1;
  asio::co_spawn(io, run(a), [&](std::exception_ptr e, int r) {
    rc = r;
    if (e) {
      try { std::rethrow_exception(e); } catch (const std::exception& x) { say(std::string("ERROR: ") + x.what()); }
      rc = 2;
    }
  });
  io.run();
  return rc;
}
