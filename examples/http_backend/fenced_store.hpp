#pragma once
// The resource the example protects: a directory with one file per report id (ID.report). It
// stands in for a real database or object store that checks fencing tokens, so a holder whose
// lease was lost (a long pause, a partition) cannot overwrite the report of the holder after it.
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace http_backend {

enum class write_result {
  written,  // the token was newer than the last one stored for this id
  stale,    // rejected: a write with this token or a newer one already happened
  failed,   // the file system said no (the reason went to stderr)
};

// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so the journal's
// intervals from two processes can be compared.
std::int64_t monotonic_ns();

class fenced_store {
 public:
  explicit fenced_store(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // Stores `report` for `id` if `token` is greater than the last token stored for it, and then
  // appends "id token start_ns end_ns pid" to DIR/journal. The check, the write and the journal
  // line happen under flock(2) on DIR/ID.report: two processes writing one id are serialised.
  // Blocking (a few small file operations); the lock is uncontended when the mongolock works.
  write_result write(std::string_view id, std::int64_t token, std::int64_t start_ns, std::string_view report) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace http_backend
