#pragma once
// The resource the example protects: one MongoDB document per report id, in a collection beside
// the locks, written only through the lease's fenced write (mongolock/fence.hpp). A holder whose
// lease was lost (a long pause, a partition) and that still writes is refused once the holder
// after it has written the report: the document's fence is above its token
// (docs/design.md section 15). DIR/journal records each write applied, for the tests.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <filesystem>
#include <string>

#include "mongolock.hpp"

namespace http_backend {

enum class write_result {
  written,  // the document's fence was at most our token (or absent): stored, fence raised
  stale,    // refused: a newer token has written this report (errc::fenced_out)
  failed,   // the server said no (the reason went to stderr)
};

// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so the journal's
// intervals from two processes can be compared.
std::int64_t monotonic_ns();

class fenced_store {
 public:
  // Reports go to database.collection: {_id: ID, report: TEXT, pid: PID, fence: TOKEN}.
  fenced_store(std::string database, std::string collection, std::filesystem::path journal_dir)
      : where_{std::move(database), std::move(collection)}, dir_(std::move(journal_dir)) {}

  // Stores `report` for `id` with the lease's fenced upsert (one command), then appends
  // "id token start_ns end_ns pid" to DIR/journal (one write(2) with O_APPEND).
  boost::asio::awaitable<write_result> write(const mongolock::lease& lease, std::string id, std::int64_t start_ns,
                                             std::string report) const;

 private:
  mongolock::fenced_collection where_;
  std::filesystem::path dir_;
};

}  // namespace http_backend
