// mongolock-http-backend: an HTTP service that renders reports, one at a time per report id
// across every instance, with mongolock. Shows the library inside a Boost.Beast server: try-lock
// answered with 409, work guarded by the lease and fenced by its token, 503 when the lock server
// is in trouble, cancellation when the client hangs up, and a clean shutdown on SIGTERM.
//
//   mongolock-http-backend --uri URI --database DB --collection COLL --port PORT --store DIR
//                          [--reports COLL] [--work-ms N] [--lock-timeout-ms N]
//
//   POST /reports/{id}   id: 1-64 of [A-Za-z0-9_-]
//     200 {"id":"42","token":17}   rendered and stored with fencing token 17: the document
//                                  {_id: "42", report, pid, fence: 17} in DB.COLL_reports
//     409 {"error":"busy"}         another request (in any instance) is rendering this id
//     409 {"error":"stale token"}  fenced out: a newer token has written this report
//     503 {"error":"..."}          lock server unavailable or failing, lease lost, shutting down
//     400 bad id, 404 other paths, 405 other methods
//   GET /metrics         the provider's counters, Prometheus text format 0.0.4 (mongolock_*)
//   A client that disconnects mid-work cancels the work; the lock is released at once.
//
// Exit status: 0 after SIGTERM/SIGINT and a clean shutdown, 64 for bad arguments, 1 otherwise.
#include <charconv>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "backend.hpp"

namespace {

constexpr const char* usage =
    "usage: mongolock-http-backend --uri URI --database DB --collection COLL --port PORT --store DIR"
    " [--reports COLL] [--work-ms N] [--lock-timeout-ms N]\n";
constexpr const char* help =
    "Renders reports one at a time per id across every instance, under the lock 'report-ID'.\n"
    "  POST /reports/ID   200 rendered (with its fencing token), 409 busy or stale token,\n"
    "                     503 lock server unavailable or failing, lease lost, shutting down\n"
    "  GET /metrics       the lock provider's counters (Prometheus text format 0.0.4)\n"
    "  --port 0 picks a free port (printed as 'listening on PORT'); --work-ms N (0..3600000)\n"
    "  is how long each rendering holds the lock; --lock-timeout-ms N (1..60000, default 1000)\n"
    "  bounds a request's wait for the lock server (503 after it). Reports are MongoDB documents\n"
    "  in DB.COLL_reports (--reports), written with the lease's fenced write; --store DIR gets\n"
    "  a journal of the writes applied.\n"
    "  SIGTERM or SIGINT: clean shutdown, exit 0; bad arguments: 64.\n";

std::optional<long> number(std::string_view s, long max) {
  long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0 || v > max) return std::nullopt;
  return v;
}

// Returns an error message, or "" when `o` is complete.
std::string parse(int argc, char** argv, http_backend::options& o) {
  bool have_port = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return "missing value for " + std::string(flag);
    const std::string_view value = argv[++i];
    if (flag == "--uri") o.uri = value;
    else if (flag == "--database") o.database = value;
    else if (flag == "--collection") o.collection = value;
    else if (flag == "--store") o.store = value;
    else if (flag == "--reports") o.reports = value;
    else if (flag == "--port") {
      const auto p = number(value, 65535);
      if (!p) return "--port: expected 0..65535, got '" + std::string(value) + "'";
      o.port = static_cast<unsigned short>(*p);
      have_port = true;
    } else if (flag == "--work-ms") {
      const auto w = number(value, 3'600'000);
      if (!w) return "--work-ms: expected 0..3600000, got '" + std::string(value) + "'";
      o.work = std::chrono::milliseconds(*w);
    } else if (flag == "--lock-timeout-ms") {
      const auto t = number(value, 60'000);
      if (!t || *t == 0) return "--lock-timeout-ms: expected 1..60000, got '" + std::string(value) + "'";
      o.lock_timeout = std::chrono::milliseconds(*t);
    } else {
      return "unknown option " + std::string(flag);
    }
  }
  if (o.uri.empty()) return "--uri is required";
  if (o.database.empty()) return "--database is required";
  if (o.collection.empty()) return "--collection is required";
  if (!have_port) return "--port is required (0: pick a free one)";
  if (o.store.empty()) return "--store is required";
  std::error_code ec;
  if (!std::filesystem::is_directory(o.store, ec)) return "--store: " + o.store.string() + " is not a directory";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  http_backend::options o;
  if (argc == 2 && std::string_view(argv[1]) == "--help") {
    std::cout << usage << help;
    return 0;
  }
  if (const auto error = parse(argc, argv, o); !error.empty()) {
    std::cerr << "mongolock-http-backend: " << error << "\n" << usage;
    return 64;
  }
  return http_backend::run(o);
}
