#pragma once
// The process between `mongolock run` and COMMAND. Without it, a `mongolock` killed by SIGKILL
// (the OOM killer, an operator) leaves COMMAND running without the lock, beside the next holder.
//
//   mongolock ── supervisor (leads COMMAND's process group) ── COMMAND
//
// The supervisor holds the read end of a pipe whose only write end is in `mongolock`. The pipe
// reads as end-of-file exactly when `mongolock` is gone, however it died, with no race at start
// (if it is already gone, the first poll says so). Through it `mongolock` also sends the lease's
// local deadline (CLOCK_BOOTTIME, ms, 8 bytes a message) after every renewal: a `mongolock` that
// is alive but cannot act (SIGSTOP, a debugger, a swap storm) sends no newer one, and the lease
// ends by its own clock at the last one sent. In either case the supervisor does what `mongolock`
// does when the lease is lost: SIGTERM to the process group, then SIGKILL to all of it (itself
// included) after --kill-after, but no later than a margin past the deadline, so that even a
// COMMAND deaf to SIGTERM is gone before a waiter can take the lock (docs/design.md section 2).
// Before it stops the group it writes one byte on a second pipe, whose read end is `mongolock`'s:
// the group's SIGKILL ends the supervisor too, and `mongolock` must tell that end from another
// SIGKILL (the OOM killer) by the supervisor's word, not by comparing the time with the last
// deadline it sent, which may already be newer than the one the supervisor acted on
// (docs/design.md section 2).
// Otherwise it waits for COMMAND and exits with COMMAND's status (128+N if killed by signal N),
// or 74 if it saw COMMAND end only after the deadline, so `mongolock` reports what it always did.
//
// A pipe rather than PR_SET_PDEATHSIG: the death signal follows the *thread* that forked, and
// signals can be missed between fork and prctl; end-of-file has neither problem.
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdint>

#include "args.hpp"
#include "exec_plan.hpp"

namespace mongolock::cli {

// Signals `mongolock` forwards to COMMAND's process group: the supervisor, in that group,
// ignores them; COMMAND gets them with their default disposition.
inline constexpr int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP};

// A wait status as the exit code `mongolock run` reports: the code, or 128+N if killed by signal
// N (as shells do). The supervisor exits with COMMAND's, and `mongolock` maps the supervisor's.
inline int exit_code_of(int status) noexcept {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return exit_software;
}

// CLOCK_BOOTTIME in ms: the clock of the lease's deadline (it counts suspended time, as the
// library's boot_clock does), read the same way in both processes.
std::int64_t boot_ms() noexcept;

// The child side of fork(), in the new process group: starts COMMAND (`plan`) and supervises it.
// `parent_alive`: the pipe's read end; `stopping`: the write end of the pipe that says the
// supervisor stopped the job (one byte, before the group's SIGKILL); `kill_after`: from SIGTERM to
// SIGKILL, at most until `margin` past the deadline; `deadline_ms`: the lease's local deadline
// when it forked (boot_ms). Async-signal-safe throughout (the parent is multi-threaded); never
// returns.
[[noreturn]] void supervise(const exec_plan& plan, int parent_alive, int stopping, std::chrono::milliseconds kill_after,
                            std::chrono::milliseconds margin, std::int64_t deadline_ms) noexcept;

}  // namespace mongolock::cli
