#pragma once
// The first reads of a set's waits, as one find (docs/design.md section 10, "The first reads go
// together"). A semaphore's waits start with a read of each permit at once; a rw_lock writer's
// blind takes of its permits come back "not taken" together, and each then reads. Without this,
// N single reads; with it, one `read_each` of the names (a lone read stays a read).
//
// The caller opens a gathering over its names before its operations start. The first majority
// read of each name is then held until every name has read or was heard from otherwise (its
// operation ended, parked behind another acquire of the name, or wrote to the line), or `hold`
// after the first read held, or the handle is dropped; then what is held goes out in one find,
// and each read is answered with its own document. Only a delay: each caller's deadline is its
// async_call's, and its receive time is taken when the find's reply has come (section 2).
#include <boost/asio/any_io_executor.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "store/lock_store.hpp"

namespace mongolock::detail {

class read_gatherer : public std::enable_shared_from_this<read_gatherer> {
 public:
  explicit read_gatherer(std::shared_ptr<lock_store> inner);

  // Opens a gathering of the first reads of `names`; a name already in an open gathering stays in
  // that one. The handle: dropping it sends whatever is held. Null when nothing is gathered.
  std::shared_ptr<void> open(const boost::asio::any_io_executor& ex, const std::vector<std::string>& names,
                             std::chrono::milliseconds hold);
  // True if the read was taken into a gathering (it is answered when the gathering goes).
  bool hold(const std::string& name, read_mode m, lock_store::reply<outcome<lock_doc>>& r);
  // `name`'s operation will not read soon (it ended, parked, or made another call first).
  void heard_from(const std::string& name);
  // Reads that rode in another's find: the commands saved (stats::server_calls).
  std::uint64_t saved() const noexcept { return saved_.load(std::memory_order_relaxed); }

 private:
  struct held_read {
    std::string name;
    lock_store::reply<outcome<lock_doc>> reply;
  };
  struct gathering {
    boost::asio::any_io_executor ex;
    std::chrono::milliseconds hold{};
    std::unordered_set<std::string> awaited;
    std::vector<held_read> reads;
    bool open = true;
  };

  // Under mu_: `name` no longer awaited; its gathering if that completed it.
  std::shared_ptr<gathering> note(const std::string& name);
  // Ends `g` if still open and sends what it held.
  void close(const std::shared_ptr<gathering>& g);
  void start_bound(const std::shared_ptr<gathering>& g);

  const std::shared_ptr<lock_store> inner_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<gathering>> open_;  // name: its open gathering
  std::atomic<std::uint64_t> saved_{0};
};

}  // namespace mongolock::detail
