#pragma once
// Every command within the server's limits, whatever the caller holds (docs/design.md section 14,
// "Every command within the server's limits"). Two of the store's operations take a list: a
// release of every lease a provider holds (release_owners), which grows with the leases, and a
// find of many names (read_each: a set's looks at its names, 64 at most today). Each goes to the
// store below in parts
// whose lists weigh at most the server's maxBsonObjectSize less a reserve for the rest of the
// command (store/bson_sizes.hpp), one after another (all at once, a release of many parts would
// take every worker of the client's pool from the renewals), and answered as one call:
//   - release_owners: each part frees its own leases only (names[i] with owners[i]); the count is
//     the parts' sum; if a part fails, the call fails with its error and counts what the others
//     freed;
//   - read_each: the parts' documents in the order of the names; if a part fails, the call fails
//     (its caller reads again, as after any failed find).
// The other operations are bounded by count (256 statements or leases a command: the renewal,
// group commit) or by one name, so a command of them stays far under the limit (its test:
// command_sizes, the commands at their bounds); they pass through (forwarding_store). The limit is the one the
// server's hello gave (`prepare`), 16 MiB until then.
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "store/forwarding_store.hpp"

namespace mongolock::detail {

class splitting_store final : public forwarding_store {
 public:
  explicit splitting_store(std::shared_ptr<lock_store> inner) : forwarding_store(std::move(inner)) {}

  void prepare(reply<outcome<server_info>> r) override;
  void read_each(const std::vector<std::string>& names, read_mode m, reply<outcome<std::vector<lock_doc>>> r) override;
  void release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                      reply<outcome<std::int64_t>> r) override;
  // The commands sent beyond one a call (stats::server_calls counts a call as one).
  std::uint64_t extra_commands() const noexcept { return extra_.load(std::memory_order_relaxed); }

 private:
  // The bytes a part's list may weigh: the server's limit less the command's reserve.
  std::size_t budget() const noexcept;

  // Shared with the replies of `prepare`, which may come after this store is gone.
  const std::shared_ptr<std::atomic<std::size_t>> max_bson_ =
      std::make_shared<std::atomic<std::size_t>>(default_max_bson_bytes);
  std::atomic<std::uint64_t> extra_{0};
};

}  // namespace mongolock::detail
