#include "supervise.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


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

std::int64_t now_ms() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1'000'000;
}

void wake(int) {}  // SIGCHLD only interrupts ppoll

}  // namespace

void supervise(const exec_plan& plan, int parent_alive, std::chrono::milliseconds kill_after) noexcept {
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

  int status = 0;
  for (;;) {
    if (::waitpid(job, &status, WNOHANG) == job) ::_exit(exit_code_of(status));
    pollfd p{parent_alive, POLLIN, 0};
    if (::ppoll(&p, 1, nullptr, &original) > 0) break;  // readable or hung up: nobody writes, so it is gone
  }

  // `mongolock` is gone and with it the lease: stop the job as a lost lease would, then say so.
  ::kill(-::getpgrp(), SIGTERM);  // this process ignores it
  say("mongolock: the mongolock process died; stopping the command (SIGTERM, then SIGKILL)\n");
  const auto deadline = now_ms() + kill_after.count();
  for (auto left = kill_after.count(); left > 0; left = deadline - now_ms()) {
    if (::waitpid(job, &status, WNOHANG) == job) break;
    const timespec t{static_cast<time_t>(left / 1000), static_cast<long>(left % 1000) * 1'000'000};
    ::ppoll(nullptr, 0, &t, &original);
  }
  // Whatever is left of the group, this process included: nobody holds the lock for it now.
  ::kill(-::getpgrp(), SIGKILL);
  ::_exit(exit_lost);
}

}  // namespace mongolock::cli
