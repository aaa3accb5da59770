// The simulation's reactors check their timers on every run (docs/design.md section 11, "Virtual
// time"). Asio's epoll reactor otherwise learns that a timer is due from a timerfd on the real
// monotonic clock: armed at once for a virtual due time, it still becomes readable only after the
// kernel's timer interrupt, so a poll() could miss a timer that virtual time says is due. Where
// timerfd_create fails (old kernels), Asio falls back to checking the timer queues on every
// reactor run and asking each for its earliest expiry when it computes a wait: this binary's
// timerfd_create always fails, so every io_context here takes that path. The library's own code
// is unchanged; only this test binary defines the symbol.
#include <sys/timerfd.h>

#include <cerrno>

extern "C" int timerfd_create(int, int) noexcept {
  errno = ENOSYS;
  return -1;
}
