#pragma once
// Batched renewal (docs/design.md section 5): one store command per provider per tick renews every
// lease the provider holds. A lease hands in its renewal with the instant it is due and the
// earliest instant it may go (half a renewal period before); when the first due instant comes,
// every lease whose earliest instant has passed goes in the same command. Renewing early only moves
// a deadline forward, and it makes leases taken at different times fall into one train within a
// period: of two trains, the later one's earliest instant always lies before the earlier one's next
// due instant, or the other way round.
//
// Safety stays with each lease: its deadline counts from the batch's send time (measured before
// the command is queued, so it is never later than the real send), a lease past its deadline is
// never sent, and its watchdog does not depend on any of this.
#include <boost/asio/any_io_executor.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/clocks.hpp"
#include "mongolock/stats.hpp"
#include "store/lock_store.hpp"
#include "engine/spawn.hpp"

namespace mongolock::detail {

// One lease's renewal: renewed (value) or why not, and when its command was sent.
struct renewal_outcome : outcome<bool> {
  boot_clock::time_point sent{};
};

class renewal_batch : public std::enable_shared_from_this<renewal_batch> {
 public:
  // Leases per command: a bounded filter, whatever a provider holds.
  static constexpr std::size_t max_per_command = 256;

  struct request {
    held_lease lease;
    std::chrono::milliseconds expiry{0};
    boot_clock::time_point due, earliest, deadline;
  };
  using answer = std::function<void(renewal_outcome)>;

  renewal_batch(const boost::asio::any_io_executor& ex, std::shared_ptr<lock_store> store);

  // Any thread. `done` is called exactly once, from any thread: with the lease's result once its
  // batch is answered, with errc::timeout if its deadline passes before a batch goes, or with
  // operation_aborted after forget().
  void submit(request r, answer done);
  // Any thread: the lease of `owner` ended; its pending renewal (if any) is dropped.
  void forget(std::string owner);
  // Store commands sent so far (the provider's server_calls counts them).
  std::uint64_t commands() const noexcept { return commands_.load(std::memory_order_relaxed); }
  // The round trips of the commands answered so far, into `s` (renewal_time, renewal_histogram).
  void round_trips(stats& s) const noexcept;

 private:
  struct entry {
    request req;
    answer done;
  };
  void arm();                // on the strand
  void fire();               // on the strand
  void send(std::vector<entry> batch, std::chrono::milliseconds expiry);
  void count_round_trip(std::chrono::nanoseconds took) noexcept;  // any thread

  strand_type strand_;
  std::shared_ptr<lock_store> store_;
  boot_timer timer_;
  std::vector<entry> pending_;
  std::optional<boot_clock::time_point> armed_for_;
  std::atomic<std::uint64_t> commands_{0};
  // Written where a command's answer arrives (any worker thread): relaxed, as every counter.
  std::atomic<std::uint64_t> round_trip_ns_{0};
  std::array<std::atomic<std::uint64_t>, stats::renewal_bucket_bounds.size() + 1> round_trip_buckets_{};
};

}  // namespace mongolock::detail
