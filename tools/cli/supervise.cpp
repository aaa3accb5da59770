#include "supervise.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>


namespace mongolock::cli {
namespace {

void set_disposition(int sig, void (*handler)(int)) noexcept {
  struct sigaction a = {};
  a.sa_handler = handler;
  ::sigemptyset(&a.sa_mask);
  ::sigaction(sig, &a, nullptr);
}

void say(const char* text) noexcept {
  std::size_t n = 0;
  while (text[n]) ++n;
  [[maybe_unused]] auto written = ::write(2, text, n);
}

void wake(int) {}  // SIGCHLD only interrupts ppoll

// A ppoll timeout of at most a second. ppoll waits on CLOCK_MONOTONIC, which stops while the
// machine is suspended, and the deadline is on CLOCK_BOOTTIME, which does not: waking at least
// once a second notices a deadline passed during a suspend within a second of the resume (as
// model/clocks.hpp does for the library's timers).
timespec at_most_a_second(std::int64_t left_ms) noexcept {
  const auto ms = left_ms < 1000 ? left_ms : 1000;
  return {static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000};
}

// Reads whatever deadlines `mongolock` sent (the latest wins). False once the pipe is at
// end-of-file (or broken): `mongolock` is gone.
bool read_deadlines(int fd, std::int64_t& deadline_ms) noexcept {
  for (;;) {
    std::int64_t got[16];
    const auto n = ::read(fd, got, sizeof got);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    // Writes of 8 bytes are atomic (< PIPE_BUF), so whole messages arrive.
    if (n >= static_cast<ssize_t>(sizeof got[0])) deadline_ms = got[n / static_cast<ssize_t>(sizeof got[0]) - 1];
  }
}

}  // namespace

std::int64_t boot_ms() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_BOOTTIME, &t);
  return std::int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1'000'000;
}

void supervise(const exec_plan& plan, int parent_alive, int stopping, std::chrono::milliseconds kill_after,
               std::chrono::milliseconds margin, std::int64_t deadline_ms) noexcept {
  // The parent blocked these signals around fork(): its handlers (Asio's) must never run here.
  for (int sig : forwarded_signals) set_disposition(sig, SIG_IGN);
  set_disposition(SIGCHLD, wake);
  // A write to a stderr whose reader died with `mongolock` must not kill this process before it
  // has stopped the job. COMMAND gets the disposition `mongolock` had.
  struct sigaction ignore_pipe = {}, inherited_pipe = {};
  ignore_pipe.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore_pipe, &inherited_pipe);
  const pid_t supervisor = ::getpid();
  sigset_t original;  // the mask from before the parent's additions: COMMAND gets it back
  ::sigprocmask(SIG_SETMASK, nullptr, &original);
  for (int sig : forwarded_signals) ::sigdelset(&original, sig);
  ::sigdelset(&original, SIGCHLD);
  sigset_t waiting = original;  // SIGCHLD blocked except inside ppoll: no wake-up is lost
  ::sigaddset(&waiting, SIGCHLD);
  ::sigprocmask(SIG_SETMASK, &waiting, nullptr);

  // _Fork: no atfork handlers, async-signal-safe (glibc >= 2.34).
  const pid_t job = ::_Fork();
  if (job < 0) {
    say("mongolock: cannot start the command: fork failed\n");
    ::_exit(exit_software);
  }
  if (job == 0) {
    // If the supervisor itself is killed (it is a copy of `mongolock`, as likely an OOM victim),
    // COMMAND dies with it; `mongolock`, if alive, kills the rest of the group (run.cpp).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != supervisor) ::_exit(exit_lost);  // it died before the line above
    for (int sig : forwarded_signals) set_disposition(sig, SIG_DFL);
    set_disposition(SIGCHLD, SIG_DFL);
    ::sigaction(SIGPIPE, &inherited_pipe, nullptr);
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    plan.exec();  // parent_alive is close-on-exec
  }

  ::fcntl(parent_alive, F_SETFL, ::fcntl(parent_alive, F_GETFL) | O_NONBLOCK);
  int status = 0;
  bool gone = false;
  for (;;) {
    // The newest deadline first: this process may have been stopped too, with some unread.
    gone = !read_deadlines(parent_alive, deadline_ms);
    // COMMAND ended by itself. Seen ending before the deadline, it ran under the lock and its
    // status is the truth; seen only after it (this process was stopped or stalled as well), the
    // lock may have been someone else's by then: 74, as for a lost lease.
    if (::waitpid(job, &status, WNOHANG) == job)
      ::_exit(boot_ms() < deadline_ms ? exit_code_of(status) : exit_lost);
    if (gone) break;
    const auto left = deadline_ms - boot_ms();
    if (left <= 0) break;  // no newer deadline came: the lease has ended by its own clock
    const timespec t = at_most_a_second(left);
    pollfd p{parent_alive, POLLIN, 0};
    ::ppoll(&p, 1, &t, &original);
  }

  // The lease has ended (`mongolock` is gone, or could not renew it in time): stop the job as a
  // lost lease would, then say so. First to `mongolock`, which reads it once this process has
  // ended: one byte in an empty pipe is written at once (and fails harmlessly, SIGPIPE ignored,
  // if `mongolock` is gone).
  const char stopped = 'S';
  [[maybe_unused]] auto told = ::write(stopping, &stopped, 1);
  ::kill(-::getpgrp(), SIGTERM);  // this process ignores it
  say(gone ? "mongolock: the mongolock process died; stopping the command (SIGTERM, then SIGKILL)\n"
           : "mongolock: the lease's local deadline passed with no newer one from the mongolock process (stopped, "
             "stalled, or its renewals failed); stopping the command (SIGTERM, then SIGKILL)\n");
  // SIGKILL after --kill-after, but no later than a margin past the lease's deadline: a waiter
  // takes over 2 x margin after it at the earliest (docs/design.md section 2).
  const auto by_grace = boot_ms() + kill_after.count(), by_lease = deadline_ms + margin.count();
  const auto kill_at = by_grace < by_lease ? by_grace : by_lease;
  for (auto left = kill_at - boot_ms(); left > 0; left = kill_at - boot_ms()) {
    if (::waitpid(job, &status, WNOHANG) == job) break;
    const timespec t = at_most_a_second(left);
    ::ppoll(nullptr, 0, &t, &original);
  }
  // Whatever is left of the group, this process included: nobody holds the lock for it now.
  // `mongolock` tells this end from another SIGKILL by the byte written above (run.cpp).
  ::kill(-::getpgrp(), SIGKILL);
  ::_exit(exit_lost);
}

}  // namespace mongolock::cli
