#pragma once
// The HTTP server of the example: POST /reports/{id} renders a report under a mongolock lease.
#include <chrono>
#include <filesystem>
#include <string>

namespace http_backend {

struct options {
  std::string uri, database, collection;
  unsigned short port = 0;  // 0: the OS picks one; it is printed as "listening on PORT"
  std::filesystem::path store;  // the journal of writes applied (for the tests)
  // The reports' collection in `database` (the protected resource, written fenced): "" =
  // COLLECTION_reports.
  std::string reports;
  std::chrono::milliseconds work{200};  // how long rendering one report takes
  // The lock server's answer to a request's try-lock is awaited this long, whatever the URI's
  // serverSelectionTimeoutMS: a down server costs a request 503 after this, not the driver's
  // server-selection timeout (docs/timeouts-and-cancellation.md, way 4).
  std::chrono::milliseconds lock_timeout{1000};
};

// Listens on 127.0.0.1:port until SIGTERM or SIGINT, then shuts down cleanly. Returns the exit
// status: 0 after a clean shutdown, 1 if a lock could not be released or the port not bound,
// 64 if the URI, database or collection is unusable.
int run(const options& o);

}  // namespace http_backend
