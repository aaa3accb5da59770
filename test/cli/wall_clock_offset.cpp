// LD_PRELOAD shim for cron_stress.sh: the process's wall clock, as std::chrono::system_clock and
// date(1) read it (clock_gettime), is MONGOLOCK_WALL_OFFSET_S seconds off: a host whose clock is
// wrong. Its monotonic and boot clocks and its timers are left alone, as on such a host.
// gettimeofday is left alone too: libmongoc adds its timeouts to it for pthread_cond_timedwait,
// whose deadline the kernel reads on the true clock, so a host behind by more than the server
// selection timeout would find every wait over at once ("server unreachable").
// libfaketime is not used here: it also moves the absolute instants of timerfd_settime, and Asio
// arms its timerfd at the absolute 1 ns whenever a timer is already due, so a process more than
// its uptime behind, or any amount ahead, can stop firing timers for good
// (test/integration/processes.hpp, behind(); seen as a `mongolock run` asleep for minutes).
#include <dlfcn.h>
#include <cstdlib>
#include <ctime>

namespace {

bool is_wall(clockid_t id) { return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE; }

// Looked up on first use, not in a constructor: another library's constructor may read a clock
// before this one's has run.
long offset_seconds() {
  static const long offset = [] {
    const char* s = std::getenv("MONGOLOCK_WALL_OFFSET_S");
    return s ? std::strtol(s, nullptr, 10) : 0L;
  }();
  return offset;
}

}  // namespace

extern "C" {

int clock_gettime(clockid_t id, timespec* ts) noexcept {
  static const auto real = reinterpret_cast<int (*)(clockid_t, timespec*)>(::dlsym(RTLD_NEXT, "clock_gettime"));
  const int r = real(id, ts);
  if (r == 0 && is_wall(id)) ts->tv_sec += offset_seconds();
  return r;
}

}  // extern "C"
