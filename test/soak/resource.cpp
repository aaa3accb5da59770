#include "resource.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace soak {

std::int64_t boot_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

template <class Fn>
void fenced_resource::update(Fn&& fn) {
  const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + path_);
  int locked;
  while ((locked = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
  }  // SIGTERM (the end of the run) interrupts a wait behind a stopped worker
  if (locked != 0) {
    ::close(fd);
    throw std::runtime_error("cannot lock " + path_);
  }
  char buf[128] = {};
  state s;
  if (::pread(fd, buf, sizeof buf - 1, 0) > 0)
    std::sscanf(buf, "%ld %ld %ld %ld", &s.highest, &s.occupant_token, &s.occupant_pid, &s.occupant_deadline);
  fn(s);
  const int n = std::snprintf(buf, sizeof buf, "%ld %ld %ld %ld\n", s.highest, s.occupant_token, s.occupant_pid,
                              s.occupant_deadline);
  const bool ok = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, buf, n, 0) == n;
  ::close(fd);  // drops the flock
  if (!ok) throw std::runtime_error("cannot write " + path_);
}

entry fenced_resource::enter(std::int64_t token, std::int64_t deadline_ns) {
  entry e;
  update([&](state& s) {
    if (token <= s.highest) {
      e.what = entry::kind::refused;
      e.highest = s.highest;
      return;
    }
    const auto now = boot_ns();
    if (s.occupant_token != 0 && now < s.occupant_deadline) {
      e.what = entry::kind::overlap;
      e.occupant_token = s.occupant_token;
      e.occupant_pid = s.occupant_pid;
      e.late_ns = s.occupant_deadline - now;
    }
    s = {token, token, static_cast<std::int64_t>(::getpid()), deadline_ns};
  });
  return e;
}

void fenced_resource::leave(std::int64_t token) {
  update([&](state& s) {
    if (s.occupant_token == token) s.occupant_token = s.occupant_pid = s.occupant_deadline = 0;
  });
}

}  // namespace soak
