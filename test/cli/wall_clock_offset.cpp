// LD_PRELOAD shim for cron_stress.sh: the process's wall clock reads MONGOLOCK_WALL_OFFSET_S
// seconds off (a host whose clock is wrong); its monotonic and boot clocks and its timers are left
// alone, as on such a host. libfaketime is not used there: it also moves the absolute instants of
// timerfd_settime, and Asio arms its timerfd at the absolute 1 ns whenever a timer is already due,
// so a process more than its uptime behind, or any amount ahead, can stop firing timers for good
// (test/integration/processes.hpp, behind(); seen as a `mongolock run` asleep for minutes).
#include <dlfcn.h>
#include <sys/time.h>

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

int gettimeofday(timeval* tv, void*) noexcept {
  timespec ts{};
  const int r = clock_gettime(CLOCK_REALTIME, &ts);
  if (r == 0) *tv = timeval{ts.tv_sec, static_cast<suseconds_t>(ts.tv_nsec / 1000)};
  return r;
}

time_t time(time_t* out) noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}

}  // extern "C"
