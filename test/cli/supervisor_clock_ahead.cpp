// LD_PRELOAD shim for cli_test.sh: in the forked child of a process named `mongolock` (the
// supervisor of `mongolock run`, tools/cli/supervise.hpp), CLOCK_BOOTTIME reads
// MONGOLOCK_SUPERVISOR_AHEAD_MS ahead. The supervisor then finds the lease's local deadline passed
// while `mongolock`, on the true clock, holds a later one: what it sees when `mongolock` sends a
// newer deadline just after the supervisor read the last one (docs/design.md section 2), made
// certain instead of a one-millisecond race. `mongolock` itself and COMMAND (after exec) read the
// true clock.
#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace {

long ahead_ms = 0;     // read in the constructor: the child may not call getenv safely
bool in_child = false;  // set in the child of fork(), until exec replaces it

bool is_mongolock() {  // COMMAND inherits the shim and must keep the true clock
  const char* name = program_invocation_short_name;
  const char* want = "mongolock";
  while (*name && *name == *want) ++name, ++want;
  return *name == 0 && *want == 0;
}

__attribute__((constructor)) void install() {
  if (!is_mongolock()) return;
  if (const char* s = std::getenv("MONGOLOCK_SUPERVISOR_AHEAD_MS")) ahead_ms = std::strtol(s, nullptr, 10);
  ::pthread_atfork(nullptr, nullptr, [] { in_child = true; });
}

}  // namespace

extern "C" {

int clock_gettime(clockid_t id, timespec* ts) noexcept {
  // Resolved on first use, in `mongolock` long before it forks (dlsym is not async-signal-safe).
  static const auto real = reinterpret_cast<int (*)(clockid_t, timespec*)>(::dlsym(RTLD_NEXT, "clock_gettime"));
  const int r = real(id, ts);
  if (r == 0 && in_child && id == CLOCK_BOOTTIME) {
    ts->tv_sec += ahead_ms / 1000;
    ts->tv_nsec += (ahead_ms % 1000) * 1'000'000;
    if (ts->tv_nsec >= 1'000'000'000) ts->tv_sec += 1, ts->tv_nsec -= 1'000'000'000;
  }
  return r;
}

}  // extern "C"
