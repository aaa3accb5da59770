// mongolock: flock(1) for a whole cluster. Uses only the library's public API.
#include <sys/mman.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "args.hpp"
#include "fence_command.hpp"
#include "holder_text.hpp"
#include "json.hpp"
#include "mongolock.hpp"
#include "run.hpp"

extern char** environ;

namespace asio = boost::asio;
namespace cli = mongolock::cli;
using boost::system::error_code;

namespace {

// The error and, when the library gave one, its reason (the driver's or the server's words).
int server_failure(error_code ec, const mongolock::diagnostics& d) {
  std::cerr << "mongolock: " << ec.message() << (d.reason.empty() ? "" : " (" + d.reason + ")") << "\n";
  return cli::exit_code_for(ec);
}

// An exception's text for a shell user: Boost's system_error ends it with the category and value
// (" [mongolock:7]"), which says nothing the words before it do not.
std::string readable(const std::exception& x) {
  std::string text = x.what();
  const auto open = text.rfind(" [");
  if (open != std::string::npos && text.ends_with(']') && text.find(':', open) != std::string::npos) text.resize(open);
  return text;
}

// status and list: a holder silent past its ttl may have crashed. The JSON keeps its fields
// (holder_silent_ms, ttl_ms); stderr says it in words, with when a waiter takes over.
void say_if_silent(const mongolock::lock_info& info, std::int64_t now_ms, const cli::options& o) {
  if (o.quiet) return;
  const auto hint = cli::silence_hint(info, now_ms);
  if (hint.empty()) return;
  std::cout.flush();  // the line it speaks of comes first on a shared terminal
  std::cerr << "mongolock: lock '" << cli::printable(info.name) << "' " << cli::held_by(info, now_ms) << hint << "\n";
}

asio::awaitable<int> dispatch(mongolock::client& db, mongolock::provider& locks, const cli::options& o) {
  auto token = asio::as_tuple(asio::use_awaitable);
  mongolock::diagnostics why;
  switch (o.cmd) {
    case cli::command::run: co_return co_await cli::run_command(locks, o);
    case cli::command::fence: co_return co_await cli::fence_command(db, o);
    case cli::command::status: {
      auto [ec, info] = co_await locks.async_inspect(o.name, why, token);
      if (ec) co_return server_failure(ec, why);
      const auto now = cli::wall_now_ms();
      std::cout << cli::to_json(info, now) << std::endl;
      say_if_silent(info, now, o);
      co_return info.held ? 0 : 1;  // usable in a shell test, as grep's status is
    }
    case cli::command::list: {
      auto [ec, all] = co_await locks.async_list(why, token);
      if (ec) co_return server_failure(ec, why);
      for (auto& i : all) {
        if (o.held_only && !i.held) continue;
        const auto now = cli::wall_now_ms();
        std::cout << cli::to_json(i, now) << "\n";
        say_if_silent(i, now, o);
      }
      std::cout.flush();
      co_return 0;
    }
    case cli::command::release: {
      const auto mode = o.now ? mongolock::force_mode::immediate : mongolock::force_mode::wait_out_holder;
      auto [ec, owner] = co_await locks.async_force_release(o.name, mode, why, token);
      if (ec) co_return server_failure(ec, why);
      if (owner.empty()) {
        if (!o.quiet) std::cerr << "mongolock: '" << o.name << "' was not held (free, or already force-released)\n";
        co_return 1;
      }
      std::cerr << "mongolock: force-released '" << o.name << "' from owner " << owner
                << " (operator override; that holder loses its lease at its next renewal"
                << (o.now ? "; the lock is free now" : "; new holders wait out its lease first") << ")\n";
      co_return 0;
    }
    default: co_return cli::exit_usage;
  }
}

// A process that never held a lease waits for the tidying up of its acquire (a take whose reply
// came late given back, its entry in a lock's line left) only while a server is in reach: one it
// can write to is known, or a command it sent is unanswered (it may yet be applied). Once none
// has been for `out_of_reach_enough`, its calls are all still looking for a server, and waiting
// on would hold the exit up by a server selection per call, past --wait (docs/cli.md). What is
// left undone ends on the server by itself: a line entry costs the next waiter one window, a
// take that landed after all is a holder that never renews (docs/design.md sections 7 and 2).
constexpr auto out_of_reach_enough = std::chrono::milliseconds{500};
constexpr auto reach_check = std::chrono::milliseconds{50};

struct reach_watch {
  explicit reach_watch(asio::io_context& io) : tick(io) {}
  asio::steady_timer tick;
  bool done = false;  // the shutdown ended
};

asio::awaitable<void> stop_when_out_of_reach(mongolock::client& db, asio::io_context& io,
                                             std::shared_ptr<reach_watch> w) {
  auto out = std::chrono::milliseconds{0};
  while (out < out_of_reach_enough) {
    w->tick.expires_after(reach_check);
    co_await w->tick.async_wait(asio::as_tuple(asio::use_awaitable));
    if (w->done) co_return;
    out = db.server_in_reach() ? std::chrono::milliseconds{0} : out + reach_check;
  }
  io.stop();
}

// The command, then a clean exit: a take whose acquire was interrupted (SIGINT while waiting)
// may still be answered by the server; shutdown gives it back before the process ends instead
// of leaving the lock held until --ttl. Its own failure does not change the exit code. `rc` is
// set before the shutdown begins: `io` may stop with it unfinished.
asio::awaitable<void> dispatch_then_shut_down(mongolock::client& db, mongolock::provider& locks,
                                              const cli::options& o, asio::io_context& io, int& rc) {
  rc = co_await dispatch(db, locks, o);
  auto watch = std::make_shared<reach_watch>(io);
  if (locks.snapshot().acquisitions == 0)  // it never held a lease
    asio::co_spawn(io, stop_when_out_of_reach(db, io, watch), asio::detached);
  mongolock::diagnostics why;
  auto [ec] = co_await locks.async_shutdown(why, asio::as_tuple(asio::use_awaitable));
  watch->done = true;
  watch->tick.cancel();
  if (ec && o.verbose) std::cerr << "mongolock: shutdown: " << ec.message() << " (" << why.reason << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::pair<std::string, std::string>> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!kv.starts_with("MONGOLOCK_")) continue;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  auto parsed = cli::parse_args(args, env);
  const auto& o = parsed.opts;
  if (!parsed.error.empty()) {
    std::cerr << "mongolock: " << parsed.error << "\n(see mongolock --help)\n";
    return cli::exit_usage;
  }
  if (o.cmd == cli::command::help) return std::cout << cli::usage(), 0;
  if (o.cmd == cli::command::version) return std::cout << "mongolock 0.1.0\n", 0;

  asio::io_context io;
  mongolock::client_options co;
  co.label = o.label;
  if (o.verbose)
    co.log = [](mongolock::log_level, std::string_view line) { std::cerr << "mongolock: " << line << "\n"; };
  mongolock::lock_options lo;
  lo.expiry = o.ttl;
  lo.safety_margin = o.margin;
  try {
    mongolock::client db(io.get_executor(), o.uri, co);
    mongolock::provider locks(db, o.database, o.collection, lo);
    int rc = cli::exit_software;
    asio::co_spawn(io, dispatch_then_shut_down(db, locks, o, io, rc), [&](std::exception_ptr e) {
      if (e) {
        try { std::rethrow_exception(e); } catch (const std::exception& x) { std::cerr << "mongolock: " << readable(x) << "\n"; }
        rc = cli::exit_software;
      }
    });
    io.run();
    // Done: the command ran, async_shutdown finished every release (or a run that held nothing
    // stopped waiting for it). Exit without ~client, which joins the driver's workers: one may
    // still sit in server selection for a call nobody waits for (up to serverSelectionTimeoutMS).
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    // libmongoc keeps its counters in /dev/shm/mongoc-PID (made when it loads) and removes the
    // file in its cleanup at exit, which _Exit skips: one file left per run otherwise.
    ::shm_unlink(("/mongoc-" + std::to_string(::getpid())).c_str());
    std::_Exit(rc);
  } catch (const boost::system::system_error& e) {  // bad URI, collection or --ttl: messages carry no password
    std::cerr << "mongolock: " << readable(e) << "\n";
    return cli::exit_usage;
  }
}
