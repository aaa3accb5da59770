// The simulation's reactors never wait on the kernel (docs/design.md section 11, "Virtual time").
// Only the simulation's binaries define these symbols; the library's code is unchanged.
//
// timerfd_create fails. Asio's epoll reactor otherwise learns that a timer is due from a timerfd
// on the real monotonic clock: armed at once for a virtual due time, it still becomes readable
// only after the kernel's timer interrupt, so a poll() could miss a timer that virtual time says is
// due. Where timerfd_create fails (old kernels), Asio falls back to checking the timer queues on
// every reactor run and asking each for its earliest expiry when it computes a wait: every
// io_context here takes that path.
//
// epoll_wait reports nothing at once, and epoll_ctl succeeds without a call. A simulated process
// has no descriptor to wait for (no socket: its server is in memory), only its reactor's
// interrupter, which wakes a reactor blocked in another thread; here nothing blocks (every wait is
// zero under a time source: model/clocks.hpp) and one thread polls every process. Without them
// the two calls were two thirds of a simulation's CPU.
#include <sys/epoll.h>
#include <sys/timerfd.h>

#include <cerrno>

extern "C" int timerfd_create(int, int) noexcept {
  errno = ENOSYS;
  return -1;
}

extern "C" int epoll_wait(int, struct epoll_event*, int, int) { return 0; }

extern "C" int epoll_ctl(int, int, int, struct epoll_event*) noexcept { return 0; }
