#pragma once
// The fencing-checked resource of the example programs: a file holding the highest token (or
// term) written so far. A write with a lower one is refused, as a storage service that honours
// fencing tokens would refuse it.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace examples {

// One line of an example's output: "<who> <pid> <line>", flushed at once (the tests read it).
inline void say(const char* who, const std::string& line) {
  std::printf("%s %d %s\n", who, static_cast<int>(getpid()), line.c_str());
  std::fflush(stdout);
}

// True when written; false when refused (then `highest` is the token that refused it) or when
// the file could not be opened (`highest` -1).
inline bool fenced_write(const std::string& path, std::int64_t token, long long& highest) {
  highest = -1;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return false;
  ::flock(fd, LOCK_EX);
  char buf[32] = {};
  const auto n = ::pread(fd, buf, sizeof buf - 1, 0);
  highest = n > 0 ? std::atoll(buf) : 0;
  bool ok = token >= highest;
  if (ok) {
    const auto text = std::to_string(token) + "\n";
    ok = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return ok;
}

// The same, saying (as `who`) why a write did not happen: "REJECTED <what>=T max=M".
inline bool fenced_write(const char* who, const std::string& path, const char* what, std::int64_t token) {
  long long highest = 0;
  if (fenced_write(path, token, highest)) return true;
  if (highest < 0) say(who, "ERROR: cannot open " + path);
  else say(who, std::string("REJECTED ") + what + "=" + std::to_string(token) + " max=" + std::to_string(highest));
  return false;
}

}  // namespace examples
