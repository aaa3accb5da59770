// One soak process: acquires random names of a few, enters the fenced resource of each, holds for
// 0-2 ms, leaves and releases, until SIGTERM. Every grant goes to its journal ("G name token"),
// every refused entry or overlap too ("R ..." / "O ..."), with O_APPEND writes that survive a
// SIGKILL; counters go to a stats file, rewritten every second and at exit.
#include <fcntl.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <fstream>
#include <random>

#include "engine/access.hpp"
#include "engine/lease_state.hpp"
#include "resource.hpp"
#include "soak.hpp"

namespace soak {

namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct counters {
  long acquired = 0, lost = 0, errors = 0, refused = 0, overlaps = 0;
};

void append(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) < 0) std::perror("journal");
}

void write_stats(const std::string& path, const counters& c) {
  {
    std::ofstream out(path + ".tmp");
    out << c.acquired << ' ' << c.lost << ' ' << c.errors << ' ' << c.refused << ' ' << c.overlaps << '\n';
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

// The lease's own deadline, read on its strand (where the renewal loop keeps it).
asio::awaitable<std::int64_t> deadline_of(const mongolock::lease& l) {
  const auto& st = mongolock::detail::access::state(l);
  co_await asio::post(asio::bind_executor(st->strand, asio::use_awaitable));
  const auto d = st->deadline();
  co_return std::chrono::duration_cast<std::chrono::nanoseconds>(d.time_since_epoch()).count();
}

asio::awaitable<void> run(const worker_args& a, counters& c, bool& stopping) {
  auto ex = co_await asio::this_coro::executor;
  mongolock::client db(ex, a.uri);
  mongolock::lock_options opts;
  opts.expiry = a.expiry;
  opts.backoff_min = 2ms;
  opts.backoff_max = 20ms;
  mongolock::provider locks(db, "mongolock_soak", a.collection, opts);
  const int journal = ::open((a.dir + "/journal-" + std::to_string(::getpid())).c_str(),
                             O_WRONLY | O_APPEND | O_CREAT, 0644);
  std::mt19937 rng(std::random_device{}());
  asio::steady_timer pause(ex);
  auto next_stats = std::chrono::steady_clock::now();
  while (!stopping && a.no_lock) {  // what the checker must catch: holders that never locked
    const std::string name = "soak-" + std::to_string(rng() % a.names);
    const auto token = soak::boot_ns();
    append(journal, "G " + name + " " + std::to_string(token) + "\n");
    fenced_resource res(a.dir + "/" + name);
    if (res.enter(token, token + std::chrono::nanoseconds(a.expiry).count()).what == entry::kind::overlap)
      append(journal, "O " + name + " " + std::to_string(token) + "\n");
    pause.expires_after(std::chrono::microseconds(rng() % 2000));
    co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    res.leave(token);
  }
  while (!stopping) {
    const std::string name = "soak-" + std::to_string(rng() % a.names);
    auto lock = locks.create_lock(name);  // named: GCC 12 may destroy a temporary in co_await twice
    auto [ec, lease] = co_await lock.async_acquire_for(5s, asio::as_tuple(asio::use_awaitable));
    if (ec) {
      ++c.errors;
      pause.expires_after(10ms);  // a fault is in force: do not spin
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
    } else {
      ++c.acquired;
      const auto token = lease.fencing_token();
      append(journal, "G " + name + " " + std::to_string(token) + "\n");
      const auto deadline = co_await deadline_of(lease);
      // A fresh lease whose deadline has passed: this process stalled since the grant (a
      // pause), or deadline_of is broken and the overlap check blind; the verdict counts them.
      if (deadline <= soak::boot_ns()) append(journal, "S " + name + " " + std::to_string(token) + "\n");
      fenced_resource res(a.dir + "/" + name);
      const auto e = res.enter(token, deadline);
      if (e.what == entry::kind::refused) {
        ++c.refused;
        append(journal, "R " + name + " " + std::to_string(token) + " " + std::to_string(e.highest) + "\n");
      } else {
        if (e.what == entry::kind::overlap) {
          ++c.overlaps;
          append(journal, "O " + name + " " + std::to_string(token) + " " + std::to_string(e.occupant_token) +
                              " pid " + std::to_string(e.occupant_pid) + " " + std::to_string(e.late_ns / 1000) +
                              " us before its deadline\n");
        }
        pause.expires_after(std::chrono::microseconds(rng() % 2000));
        co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        res.leave(token);
      }
      auto [rel] = co_await lease.async_release(asio::as_tuple(asio::use_awaitable));
      if (rel == mongolock::errc::lease_lost) ++c.lost;
    }
    if (std::chrono::steady_clock::now() >= next_stats) {
      write_stats(a.dir + "/stats-" + std::to_string(::getpid()), c);
      next_stats += 1s;
    }
  }
  co_await locks.async_shutdown(asio::as_tuple(asio::use_awaitable));
  ::close(journal);
}

}  // namespace

int run_worker(const worker_args& a) {
  asio::io_context io;
  counters c;
  bool stopping = false;
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code, int) { stopping = true; });
  int rc = 0;
  asio::co_spawn(io, run(a, c, stopping), [&](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        std::fprintf(stderr, "soak worker %d: %s\n", static_cast<int>(::getpid()), x.what());
      }
      rc = 1;
    }
    signals.cancel();
  });
  io.run();
  write_stats(a.dir + "/stats-" + std::to_string(::getpid()), c);
  return rc;
}

}  // namespace soak
