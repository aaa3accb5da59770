#include "run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "exec_plan.hpp"
#include "holder_text.hpp"
#include "sightings.hpp"
#include "supervise.hpp"

extern char** environ;

namespace mongolock::cli {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace asio::experimental::awaitable_operators;

namespace {

rw_lock rw_lock_of(provider& locks, const options& o) {
  rw_options ro;
  ro.max_readers = o.readers;
  return locks.create_rw_lock(o.name, ro);
}

constexpr try_options confirming{.confirm_silent_holder = true};

// The acquire --wait asks for, of any primitive (they share one acquire set,
// include/mongolock/detail/acquire_surface.hpp): async_acquire without it, async_acquire_for above
// 0, and for --wait 0 a confirming try: one look that, as docs/cli.md promises for every kind,
// watches a holder silent for long and takes over once its silence is confirmed
// (try_options::confirm_silent_holder; a cron's --wait 0 must not find a crashed holder "busy"
// night after night). Chosen here, and the operation named before it is awaited, never chosen by
// ?: inside a co_await: GCC 12 may destroy such temporaries twice.
template <class Acquirable>
auto as_asked(const options& o, const Acquirable& a, diagnostics& d) {
  auto token = asio::as_tuple(asio::use_awaitable);
  if (!o.wait) return a.async_acquire(d, token);
  if (o.wait->count() == 0) return a.async_try_acquire(confirming, d, token);
  return a.async_acquire_for(*o.wait, d, token);
}

asio::awaitable<void> say_while_confirming(provider& locks, const options& o, std::shared_ptr<asio::steady_timer> stop);

// `op`, and for --wait 0 (not --quiet) the word on stderr if it turns out to be confirming a
// silent holder (say_while_confirming).
template <class Result>
asio::awaitable<Result> announced(provider& locks, const options& o, asio::awaitable<Result> op) {
  if (!o.wait || o.wait->count() != 0 || o.quiet) co_return co_await std::move(op);
  auto said = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  asio::co_spawn(said->get_executor(), say_while_confirming(locks, o, said), asio::detached);
  auto r = co_await std::move(op);
  said->expires_at(asio::steady_timer::time_point::min());  // cancels its wait; marks the try ended
  co_return r;
}

// Named locals, not temporaries inside co_await: GCC 12 may destroy those twice.
asio::awaitable<std::tuple<error_code, lease>> acquire(provider& locks, const options& o, diagnostics& d) {
  if (o.permits > 0) {
    auto permits = locks.create_semaphore(o.name, o.permits);
    auto op = as_asked(o, permits, d);
    co_return co_await announced(locks, o, std::move(op));
  }
  if (o.shared) {
    auto reader = rw_lock_of(locks, o).reader();
    auto op = as_asked(o, reader, d);
    co_return co_await announced(locks, o, std::move(op));
  }
  auto lock = locks.create_lock(o.name);
  auto op = as_asked(o, lock, d);
  co_return co_await announced(locks, o, std::move(op));
}

asio::awaitable<std::tuple<error_code, multi_lease>> acquire_writer(provider& locks, const options& o,
                                                                     diagnostics& d) {
  auto writer = rw_lock_of(locks, o).writer();
  auto op = as_asked(o, writer, d);
  co_return co_await announced(locks, o, std::move(op));
}

// What COMMAND learns of its lease, and the release, for a lease and for a writer's leases.
std::string owner_of(const lease& l) { return l.owner_id(); }
std::string owner_of(const multi_lease& m) { return m.leases().front().owner_id(); }
std::int64_t token_of(const lease& l) { return l.fencing_token(); }
std::int64_t token_of(const multi_lease& m) { return m.highest_fencing_token(); }
auto release(lease& l, diagnostics& d) { return l.async_release(d, asio::as_tuple(asio::use_awaitable)); }
auto release(multi_lease& m, diagnostics&) { return m.async_release(asio::as_tuple(asio::use_awaitable)); }

// A file descriptor closed when it goes out of scope.
class owned_fd {
 public:
  explicit owned_fd(int fd = -1) : fd_(fd) {}
  ~owned_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  owned_fd(const owned_fd&) = delete;
  owned_fd& operator=(const owned_fd&) = delete;

 private:
  int fd_;
};

// Blocks `mongolock`'s handled signals in this thread for the scope of a fork(), so that the
// child never runs the parent's handlers before it has set its own (supervise.cpp). A signal
// sent meanwhile stays pending here, or another thread takes it.
class signals_held {
 public:
  signals_held() {
    sigset_t s;
    ::sigemptyset(&s);
    for (int sig : forwarded_signals) ::sigaddset(&s, sig);
    ::sigaddset(&s, SIGCHLD);
    ::pthread_sigmask(SIG_BLOCK, &s, &saved_);
  }
  ~signals_held() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  signals_held(const signals_held&) = delete;
  signals_held& operator=(const signals_held&) = delete;

 private:
  sigset_t saved_;
};

// Forks the supervisor (supervise.hpp), which starts COMMAND. Returns its pid, in `lifeline` the
// write end of its pipe and in `stopping` the read end of the one on which it says it stopped the
// job; -1 with errno on failure. `kill_after`, `margin`: when it stops COMMAND (supervise.hpp);
// `deadline_ms`: the lease's local deadline now (boot_ms).
pid_t start_supervisor(const exec_plan& plan, std::chrono::milliseconds kill_after,
                       std::chrono::milliseconds margin, std::int64_t deadline_ms, int& lifeline, int& stopping) {
  int alive[2], stopped[2];
  if (::pipe2(alive, O_CLOEXEC) != 0) return -1;
  if (::pipe2(stopped, O_CLOEXEC | O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(alive[0]);
    ::close(alive[1]);
    errno = error;
    return -1;
  }
  pid_t pid = -1;
  int error = 0;
  {
    const signals_held held;
    pid = ::fork();
    error = errno;
    if (pid == 0) {
      ::close(alive[1]);
      ::close(stopped[0]);
      ::setpgid(0, 0);  // own process group, so signals reach the whole job
      supervise(plan, alive[0], stopped[1], kill_after, margin, deadline_ms);
    }
  }
  ::close(alive[0]);
  ::close(stopped[1]);
  if (pid < 0) {
    ::close(alive[1]);
    ::close(stopped[0]);
    errno = error;
    return -1;
  }
  lifeline = alive[1];
  stopping = stopped[0];
  // Never block the io thread on a supervisor that does not read (it may be stopped itself).
  ::fcntl(lifeline, F_SETFL, ::fcntl(lifeline, F_GETFL) | O_NONBLOCK);
  return pid;
}

// Whether the supervisor, now reaped, stopped the job itself (the lease's local deadline passed
// by its reading): it wrote a byte before the group's SIGKILL, which ended it too. Read once the
// supervisor is reaped, so the byte is there if it was ever written; non-blocking, as COMMAND's
// processes may hold the write end until they exec.
bool supervisor_stopped_job(int stopping) {
  char said = 0;
  return ::read(stopping, &said, 1) == 1;
}

// The lease's local deadline on the supervisor's clock (boot_ms): now + time left, rounded down.
// The clock is read first: a stall between the two reads then makes the sum earlier, never later.
template <class Held>
std::int64_t deadline_of(const Held& held) {
  const auto now = boot_ms();
  return now + held.time_left().count();
}

// The lease's margin (--margin, or a tenth of --ttl). A lease is lost at its deadline or later,
// and a waiter takes the lock over 2 x margin after that deadline at the earliest
// (docs/design.md section 2): a COMMAND deaf to SIGTERM gets SIGKILL at most a margin after the
// loss, whatever --kill-after says, so it is gone a margin before.
std::chrono::milliseconds margin_of(const options& o) {
  lock_options lo;
  lo.expiry = o.ttl;
  lo.safety_margin = o.margin;
  return lo.effective_margin();
}

// Sends `deadline_ms` to the supervisor; true if it is in the pipe. A supervisor that is gone
// makes the write fail with EPIPE: its SIGPIPE (directed at this thread) is blocked around the
// write and taken back, so it never ends `mongolock`, whose own waitpid reports the supervisor's
// end. A full pipe (a supervisor stopped for long) fails with EAGAIN: the next check sends again.
bool send_deadline(int lifeline, std::int64_t deadline_ms) {
  sigset_t pipe_only, saved;
  ::sigemptyset(&pipe_only);
  ::sigaddset(&pipe_only, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe_only, &saved);
  const auto written = ::write(lifeline, &deadline_ms, sizeof deadline_ms);
  if (written < 0 && errno == EPIPE) {
    const timespec none{0, 0};
    ::sigtimedwait(&pipe_only, nullptr, &none);
  }
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return written == static_cast<ssize_t>(sizeof deadline_ms);
}

// Tells the supervisor each new local deadline of `held` (supervise.hpp): checked every `every`,
// and every millisecond in the last 2 x `every` before the last one sent, so that a renewal
// answered just before it still reaches the supervisor in time; sent when it moved. `sent`: the
// last deadline in the pipe. Stopped by `running` going false (on this thread, before `held` and
// the pipe go away) and the timer's cancellation; no cancellation slot, so nothing of the
// caller's frame is touched once it has returned.
template <class Held>
asio::awaitable<void> report_deadlines(const Held& held, int lifeline, std::shared_ptr<std::int64_t> sent,
                                       std::chrono::milliseconds every, std::shared_ptr<asio::steady_timer> t,
                                       std::shared_ptr<const bool> running) {
  for (;;) {
    const auto left = *sent - boot_ms();
    const bool close = left >= 0 && left < 2 * every.count();
    t->expires_after(close ? std::chrono::milliseconds{1} : every);
    auto [ec] = co_await t->async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec || !*running) co_return;
    const auto now = deadline_of(held);
    if (now > *sent && send_deadline(lifeline, now)) *sent = now;
  }
}

template <class Held>
asio::awaitable<int> run_holding(Held& held, const options& o, asio::signal_set& stop, asio::signal_set& children);

// --once-per: a COMMAND that exited 0 under the lease is recorded in the lock's document before
// the release. If that fails, the run happened but no host will know: say so.
asio::awaitable<void> record_run(lease& held, const options& o) {
  diagnostics why;
  auto [ec] = co_await held.async_record_completion(why, asio::as_tuple(asio::use_awaitable));
  if (ec)
    std::cerr << "mongolock: the run of '" << o.name << "' completed but could not be recorded: " << ec.message()
              << " (" << why.reason << "); another host may run it again within --once-per\n";
}

// The release, after --hold-at-least if one was asked for: the lease stays held and renewed
// until then. A signal during the hold ends it early (the lock is released at once).
asio::awaitable<std::tuple<error_code>> release_as_asked(lease& held, const options& o, diagnostics& d,
                                                         asio::signal_set& stop) {
  if (o.hold_at_least <= held.held_for()) co_return co_await release(held, d);
  if (o.verbose)
    std::cerr << "mongolock: holding '" << o.name << "' for " << (o.hold_at_least - held.held_for()).count()
              << " ms more (--hold-at-least)\n";
  auto raced = co_await (held.async_release_after(o.hold_at_least, d, asio::as_tuple(asio::use_awaitable)) ||
                         stop.async_wait(asio::as_tuple(asio::use_awaitable)));
  if (raced.index() == 0) co_return std::get<0>(std::move(raced));
  if (!o.quiet)
    std::cerr << "mongolock: signal " << std::get<1>(std::get<1>(raced)) << ": the hold of '" << o.name
              << "' ends early\n";
  co_return co_await release(held, d);
}
asio::awaitable<std::tuple<error_code>> release_as_asked(multi_lease& held, const options&, diagnostics& d,
                                                         asio::signal_set&) {
  co_return co_await release(held, d);
}

// The lock as one look finds it; nullopt if that look fails. `committed`: read concern majority,
// for a look whose token becomes a sighting (a rolled-back take must never be one).
asio::awaitable<std::optional<lock_info>> look(provider& locks, const std::string& name, bool committed = false) {
  diagnostics ignored;
  auto token = asio::as_tuple(asio::use_awaitable);
  std::tuple<error_code, lock_info> seen;  // no ?: around a co_await (as_asked above says why)
  if (committed) seen = co_await locks.async_inspect_committed(name, ignored, token);
  else seen = co_await locks.async_inspect(name, ignored, token);
  if (std::get<0>(seen)) co_return std::nullopt;
  co_return std::get<1>(std::move(seen));
}

// --once-per (docs/design.md section 13): notes that this host saw `token` now; nullopt, said on
// stderr, if what this host has seen cannot be kept.
std::optional<sightings> note_seen(const options& o, std::int64_t token) {
  std::string error;
  const auto dir = state_dir_of(o.state_dir);
  std::optional<sightings> seen;
  if (dir.empty())
    error = "no state directory: give --state-dir or MONGOLOCK_STATE_DIR (neither HOME nor XDG_STATE_HOME is set)";
  else
    seen = note_in_file(sightings_path(dir, o.uri, o.database, o.collection, o.name), token, boot_ms(), error);
  if (!seen) std::cerr << "mongolock: --once-per cannot keep what this host has seen: " << error << "\n";
  return seen;
}

// --once-per, with the lock held: the exit status that skips COMMAND, or nullopt to run it. It
// runs if no run was ever recorded, or if this host first saw the recorded run (or a later take)
// at least --once-per ago; a run new to this host is noted and skipped.
asio::awaitable<std::optional<int>> skip_if_run_lately(provider& locks, const options& o, const lease& held) {
  diagnostics why;
  auto [ec, info] = co_await locks.async_inspect(o.name, why, asio::as_tuple(asio::use_awaitable));
  if (ec) {
    std::cerr << "mongolock: --once-per cannot read the last run of '" << o.name << "': " << ec.message() << " ("
              << why.reason << ")\n";
    co_return exit_code_for(ec);
  }
  const auto seen = note_seen(o, held.fencing_token());
  if (!seen) co_return exit_software;
  if (info.last_completed_token == 0) co_return std::nullopt;
  const auto age = began_at_least(*seen, info.last_completed_token, boot_ms());
  if (age && *age >= o.once_per) co_return std::nullopt;
  // A run new to this host was noted just now (before the wait, or as our own token): age ~0.
  if (!o.quiet)
    std::cerr << "mongolock: '" << o.name << "' skipped: this host first saw its last run (token "
              << info.last_completed_token << ") " << (age ? age->count() : 0) << " ms ago, less than --once-per "
              << o.once_per.count() << " ms\n";
  co_return exit_skipped;
}

// The documents a try of `o`'s kind looks at: the lock, a semaphore's or a reader's permits
// (NAME#1..), or a writer's NAME#w and then the permits (docs/design.md section 10).
std::vector<std::string> documents_of(const options& o) {
  if (o.permits == 0 && !o.shared && !o.exclusive) return {o.name};
  std::vector<std::string> names;
  if (o.exclusive) names.push_back(o.name + "#w");
  const int n = o.permits > 0 ? o.permits : o.readers;
  for (int i = 1; i <= n; ++i) names.push_back(o.name + "#" + std::to_string(i));
  return names;
}

// A --wait 0 that finds a holder silent for long (by the wall clocks' hint) spends one observation
// window confirming that it is gone (docs/design.md section 2): the holder's lease plus our margin,
// for each silent holder of a part it looks at (a writer takes NAME#w and every permit).
// Not silently: once the try has run for 300 ms, stderr names the first silent holder of the
// documents it looks at and how long the confirmation may take. Nothing is said if the try ended
// first (`stop` cancelled).
asio::awaitable<void> say_while_confirming(provider& locks, const options& o, std::shared_ptr<asio::steady_timer> stop) {
  stop->expires_after(std::chrono::milliseconds{300});
  auto [ec] = co_await stop->async_wait(asio::as_tuple(asio::use_awaitable));
  if (ec) co_return;
  const auto names = documents_of(o);
  for (const auto& name : names) {
    auto [look_ec, info] = co_await locks.async_inspect(name, asio::as_tuple(asio::use_awaitable));
    if (stop->expiry() == asio::steady_timer::time_point::min()) co_return;
    if (look_ec || !info.held) continue;
    // As the try decides (acquire_fsm): a placeholder left by release --force, or a holder whose
    // last renewal is 3 leases old by the hint. A live holder's try is simply slow: nothing to say.
    const bool placeholder = force_released(info);
    const auto now_ms = wall_now_ms();
    const bool looks_dead = info.renewed_at_ms != 0 && now_ms - info.renewed_at_ms >= 3 * info.expiry.count();
    if (!placeholder && !looks_dead) continue;
    const auto margin = margin_of(o);
    const auto up_to = info.expiry + margin;
    const bool plain = o.permits == 0 && !o.shared && !o.exclusive;
    const std::string what = plain ? "lock" : name.ends_with("#w") ? "write lock" : "permit";
    std::cerr << "mongolock: " << what << " '" << name << "' " << held_by(info, now_ms)
              << "; --wait 0 is confirming that this silent holder is gone, which takes up to "
              << up_to.count() / 1000 << "." << (up_to.count() % 1000) / 100 << " s"
              << (plain ? "" : " per silent " + std::string(o.exclusive ? "part" : "permit")) << " (its lease of "
              << info.expiry.count() << " ms plus a margin of " << margin.count() << " ms)\n";
    co_return;
  }
}

}  // namespace

asio::awaitable<int> run_command(provider& locks, const options& o) {
  auto ex = co_await asio::this_coro::executor;
  // Registered before the wait and before fork, so no signal is missed.
  asio::signal_set stop(ex, SIGINT, SIGTERM, SIGHUP);
  asio::signal_set children(ex, SIGCHLD);

  diagnostics why;
  // "lock 'X' not acquired: " and the reason; when the holder is known, a sentence naming it
  // (instead of busy's "held by another owner") and a hint if it has been silent past its ttl.
  auto report = [&](error_code ec, const std::optional<lock_info>& holder = std::nullopt) {
    if (o.quiet) return exit_code_for(ec, o.conflict_exit_code);
    std::string reason = ec.message() + (why.reason.empty() ? "" : " (" + why.reason + ")");
    if (holder) {
      const auto now_ms = wall_now_ms();
      const auto sentence = "it " + held_by(*holder, now_ms) + silence_hint(*holder, now_ms);
      reason = ec == errc::busy ? sentence : reason + "; " + sentence;
    }
    std::cerr << "mongolock: lock '" << o.name << "' not acquired: " << reason << "\n";
    return exit_code_for(ec, o.conflict_exit_code);
  };
  if (o.exclusive) {
    auto raced = co_await (acquire_writer(locks, o, why) || stop.async_wait(asio::use_awaitable));
    if (raced.index() == 1) co_return 128 + std::get<1>(raced);  // interrupted while waiting
    auto [ec, held] = std::move(std::get<0>(raced));
    if (ec) co_return report(ec);
    auto body = run_holding(held, o, stop, children);
    co_return co_await std::move(body);
  }
  const bool once_per = o.once_per.count() > 0;
  if (once_per) {
    // A sighting before the wait: the run now holding the lock, or the last one recorded, began
    // before this moment, however long the wait then takes (docs/design.md section 13).
    auto before = co_await look(locks, o.name, true);
    if (before && !note_seen(o, before->fencing_token)) co_return exit_software;
  }
  auto raced = co_await (acquire(locks, o, why) || stop.async_wait(asio::use_awaitable));
  if (raced.index() == 1) co_return 128 + std::get<1>(raced);  // interrupted while waiting
  auto [ec, held] = std::move(std::get<0>(raced));
  const bool plain = o.permits == 0 && !o.shared;
  if (ec && plain && (!o.quiet || once_per) && (ec == errc::busy || ec == errc::timeout)) {
    // One look, bounded: --wait bounds the whole run, and a server that stopped answering
    // must not hold the exit up. It says who holds the lock, and for --once-per it is a sighting.
    asio::steady_timer bound(ex, std::chrono::milliseconds{500});
    auto looked = co_await (look(locks, o.name, once_per) || bound.async_wait(asio::use_awaitable));
    const auto info = looked.index() == 0 ? std::get<0>(looked) : std::nullopt;
    if (info && once_per) note_seen(o, info->fencing_token);
    co_return report(ec, info && info->held ? info : std::nullopt);
  }
  if (ec) co_return report(ec);
  if (once_per) {
    auto skip = co_await skip_if_run_lately(locks, o, held);
    if (skip) {
      diagnostics ignored;
      co_await release(held, ignored);
      co_return *skip;
    }
  }
  auto body = run_holding(held, o, stop, children);
  co_return co_await std::move(body);
}

namespace {

// COMMAND under the lease(s) `held`: started, stopped if a lease is lost, then the release.
template <class Held>
asio::awaitable<int> run_holding(Held& held, const options& o, asio::signal_set& stop, asio::signal_set& children) {
  auto ex = co_await asio::this_coro::executor;
  if (o.verbose) std::cerr << "mongolock: acquired '" << o.name << "' token " << token_of(held) << "\n";

  // Everything the child needs is built here: after fork it may only call async-signal-safe
  // functions (see exec_plan.hpp). A command that cannot be found is reported without forking.
  const auto command = resolve_command(o.argv[0], std::getenv("PATH"));
  if (command.error) {
    std::cerr << cannot_run_message(o.argv[0], command.error);
    diagnostics ignored;
    co_await release(held, ignored);
    co_return exit_code_for_exec_error(command.error);
  }
  std::vector<std::pair<std::string, std::string>> env{{"MONGOLOCK_NAME", o.name},
                                                        {"MONGOLOCK_OWNER", owner_of(held)},
                                                        {"MONGOLOCK_FENCING_TOKEN", std::to_string(token_of(held))}};
  if constexpr (std::is_same_v<Held, lease>)
    if (o.permits > 0 || o.shared) env.emplace_back("MONGOLOCK_PERMIT", held.name());
  const exec_plan plan(command.path, o.argv, child_environment(environ, env));
  int lifeline = -1;  // the write end of the supervisor's pipe: open until we return
  int stopping = -1;  // the read end of the pipe on which it says it stopped the job
  const auto margin = margin_of(o);
  const auto grace = std::min(o.kill_after, margin);  // after a loss seen here
  auto sent = std::make_shared<std::int64_t>(deadline_of(held));  // the last deadline in the pipe
  const pid_t pid = start_supervisor(plan, o.kill_after, margin, *sent, lifeline, stopping);
  const owned_fd close_lifeline(lifeline), close_stopping(stopping);
  if (pid < 0) {
    std::cerr << "mongolock: cannot start the command: " << std::strerror(errno) << "\n";
    diagnostics ignored;
    co_await release(held, ignored);
    co_return exit_software;
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before we signal it

  // The loss watch shares its state instead of pointing into this frame: its answer may come
  // after this function has returned (a lease lost just as the supervisor exited, seen on
  // resuming from SIGSTOP), and then it must do nothing.
  struct loss_watch {
    explicit loss_watch(asio::any_io_executor ex) : kill_timer(std::move(ex)) {}
    bool lost = false, over = false;
    asio::steady_timer kill_timer;
  };
  auto watch = std::make_shared<loss_watch>(ex);
  held.async_wait_lost([watch, pid, name = o.name, grace](error_code why) {
    if (why != errc::lease_lost || watch->over) return;
    // A supervisor that already exited saw COMMAND end before the last deadline it was sent (or
    // it would have ended the group): a loss learnt only now, on resuming from SIGSTOP say, came
    // after COMMAND, whichever of the two this process handles first. Looked at, not reaped.
    siginfo_t ended{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT) == 0 && ended.si_pid == pid &&
        ended.si_code == CLD_EXITED)
      return;
    watch->lost = true;
    std::cerr << "mongolock: lease on '" << name << "' lost; stopping the command (SIGTERM, SIGKILL after "
              << grace.count() << " ms)\n";
    ::kill(-pid, SIGTERM);
    watch->kill_timer.expires_after(grace);
    watch->kill_timer.async_wait([pid](error_code e) {
      if (!e) ::kill(-pid, SIGKILL);
    });
  });
  std::function<void(error_code, int)> forward = [&](error_code e, int sig) {
    if (e) return;
    ::kill(-pid, sig);  // the job decides how to stop; we wait for it and then release
    stop.async_wait(forward);
  };
  stop.async_wait(forward);
  // Renewals move the deadline by a renewal period: a tenth of the lease's margin is soon enough.
  auto reporting = std::make_shared<bool>(true);
  auto report_timer = std::make_shared<asio::steady_timer>(ex);
  const auto every = std::max(std::chrono::milliseconds{10}, o.ttl / 100);
  asio::co_spawn(ex, report_deadlines(held, lifeline, sent, every, report_timer, reporting), asio::detached);

  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    co_await children.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  // A supervisor that says it stopped the job ended the group at the lease's local deadline,
  // itself included (supervise.hpp): that deadline passed while this process was stopped or
  // stalled, or a renewal came too late to be sent in time. Its word, not the time against
  // `*sent`: a renewal answered just before the deadline may have moved `*sent` on after the
  // supervisor read the old one, and then a lease stopped at its deadline would be reported as a
  // killed supervisor, 137 (docs/design.md section 2).
  const bool lost = watch->lost;
  const bool past_deadline = WIFSIGNALED(status) && supervisor_stopped_job(stopping);
  if (WIFSIGNALED(status) && !lost) {
    // The supervisor was killed (OOM killer, `pkill -9 mongolock`, or its own end of the group
    // at the deadline), not COMMAND's exit: COMMAND died with it (PDEATHSIG), but what it
    // started may still run. Kill the whole group before anything is released.
    ::kill(-pid, SIGKILL);
    if (past_deadline)
      std::cerr << "mongolock: the lease on '" << o.name << "' reached its local deadline without a renewal "
                << "(this process was stopped or stalled, or its renewals failed or came too late); its supervisor "
                   "stopped the command\n";
    else
      std::cerr << "mongolock: the supervisor of the command was killed (signal " << WTERMSIG(status)
                << "); the command's process group was killed too\n";
  }
  // COMMAND finished inside its lease unless the lease was already lost by then. A supervisor that
  // exited saw COMMAND end and judged it against the deadline (74 if it ended after); otherwise
  // the lease's state now tells (`lost` may still be on its way). Whatever the release then says,
  // a job that ran under the lock has its own status, as 74 would make a wrapper re-run it.
  const bool finished_inside = !lost && !past_deadline && (WIFEXITED(status) || !held.status());
  stop.cancel();
  watch->over = true;
  watch->kill_timer.cancel();
  *reporting = false;
  report_timer->cancel();
  if (!finished_inside) co_return exit_lost;
  if constexpr (std::is_same_v<Held, lease>)
    if (o.once_per.count() > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) co_await record_run(held, o);
  diagnostics release_why;
  auto releasing = release_as_asked(held, o, release_why, stop);
  auto [rel] = co_await std::move(releasing);
  if (rel == errc::lease_lost)
    std::cerr << "mongolock: '" << o.name << "' was no longer ours at release (force-released or taken "
              << "over; by this process's clock COMMAND finished inside the lease); exiting with COMMAND's status\n";
  else if (rel && !o.quiet)
    std::cerr << "mongolock: release failed: " << rel.message() << " (" << release_why.reason << ")\n";
  if (o.verbose && !rel) std::cerr << "mongolock: released '" << o.name << "'\n";
  co_return exit_code_of(status);
}

}  // namespace

}  // namespace mongolock::cli
