#include "fenced_store.hpp"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace http_backend {

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

// Ids are [A-Za-z0-9_-] (backend.cpp checks), so they need no escaping inside JSON strings;
// the report text is the backend's own.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

}  // namespace

boost::asio::awaitable<write_result> fenced_store::write(const mongolock::lease& lease, std::string id,
                                                         std::int64_t start_ns, std::string report) const {
  namespace asio = boost::asio;
  // The _id pins the document, so the upsert of a stale holder collides with it and is refused,
  // never a second report (docs/design.md section 15).
  const std::string filter = "{\"_id\": " + json_string(id) + "}";
  const std::string update = "{\"$set\": {\"report\": " + json_string(report) + ", \"pid\": " +
                             std::to_string(::getpid()) + "}}";
  std::vector<mongolock::fenced_op> ops;
  ops.push_back({mongolock::fenced_kind::update, filter, update, true});
  mongolock::diagnostics why;
  auto [ec, r] = co_await lease.async_fenced_write(where_, std::move(ops), why, asio::as_tuple(asio::deferred));
  if (ec == mongolock::errc::fenced_out) co_return write_result::stale;
  if (ec) {
    std::fprintf(stderr, "fenced store: report %s: %s (%s)\n", id.c_str(), ec.message().c_str(), why.reason.c_str());
    co_return write_result::failed;
  }
  const auto journal = dir_ / "journal";
  const int fd = ::open(journal.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "fenced store: open %s: %s\n", journal.c_str(), std::strerror(errno));
    co_return write_result::failed;
  }
  const auto line = id + " " + std::to_string(lease.fencing_token()) + " " + std::to_string(start_ns) + " " +
                    std::to_string(monotonic_ns()) + " " + std::to_string(::getpid()) + "\n";
  // One write(2) with O_APPEND: lines of different ids, written concurrently, never interleave.
  const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  co_return ok ? write_result::written : write_result::failed;
}

}  // namespace http_backend
