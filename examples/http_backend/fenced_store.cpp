#include "fenced_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace http_backend {

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

// Closes the file (which also drops its flock) on every path out of write().
struct file {
  int fd;
  ~file() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, const std::string& text, off_t at) {
  return ::pwrite(fd, text.data(), text.size(), at) == static_cast<ssize_t>(text.size());
}

write_result fail(const char* what, const std::filesystem::path& p) {
  std::fprintf(stderr, "fenced store: %s %s: %s\n", what, p.c_str(), std::strerror(errno));
  return write_result::failed;
}

}  // namespace

// The file's first line is the last token stored, the rest the report.
write_result fenced_store::write(std::string_view id, std::int64_t token, std::int64_t start_ns,
                                 std::string_view report) const {
  const auto path = dir_ / (std::string(id) + ".report");  // an id may be "journal"
  file f{::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)};
  if (f.fd < 0) return fail("open", path);
  if (::flock(f.fd, LOCK_EX) != 0) return fail("flock", path);

  char head[32] = {};
  const auto n = ::pread(f.fd, head, sizeof head - 1, 0);
  if (n < 0) return fail("read", path);
  const long long last = n > 0 ? std::atoll(head) : 0;
  if (token <= last) return write_result::stale;

  const auto text = std::to_string(token) + "\n" + std::string(report);
  if (::ftruncate(f.fd, 0) != 0 || !write_all(f.fd, text, 0)) return fail("write", path);

  // Still under the flock: the journal's end time is after the write, and no other process can
  // write this id in between.
  const auto journal = dir_ / "journal";
  file j{::open(journal.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)};
  if (j.fd < 0) return fail("open", journal);
  const auto line = std::string(id) + " " + std::to_string(token) + " " + std::to_string(start_ns) + " " +
                    std::to_string(monotonic_ns()) + " " + std::to_string(::getpid()) + "\n";
  // One write(2) with O_APPEND: lines of different ids, written concurrently, never interleave.
  if (::write(j.fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return fail("append", journal);
  return write_result::written;
}

}  // namespace http_backend
