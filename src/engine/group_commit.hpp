#pragma once
// Group commit (docs/design.md section 14): takes, releases, and joins and leaves of lines, of one
// provider, that are ready while earlier ones of their kind are still in flight go out together,
// as one command of many statements (lock_store::write_grouped), the way a database log commits
// the records queued behind the write in progress. A lone operation goes out at once, as its own
// command: batching costs no latency when there is nothing to batch.
//
// It sits on the store seam as a lock_store itself, so every caller keeps its one-operation view:
// each operation is answered exactly once with its own outcome, and every rule of the single
// command (the take's clock from a send time measured before the call, its bound, the ambiguity
// of a lost reply or a write-concern error, give-backs) applies to it unchanged.
#include <boost/asio/any_io_executor.hpp>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/read_gathering.hpp"
#include "store/forwarding_store.hpp"

namespace mongolock::detail {

class grouping_store final : public forwarding_store, public std::enable_shared_from_this<grouping_store> {
 public:
  // Statements per command: a bounded command, however many operations are queued.
  static constexpr std::size_t max_per_command = 256;
  // Commands of one kind in flight at once before operations of that kind queue. Takes: two, so
  // that a second caller is not held back by one take alone (limits 1, 2 and 4 measured on the
  // emulator, bench scenario 2 at k = 1, 8, 64: no difference beyond the noise between runs).
  // Releases: as many as the worker pool has threads, so that a slow command never holds a
  // lease's release back while a worker is free (they ride the maintenance lane).
  static constexpr std::size_t takes_in_flight = 2;
  static constexpr std::size_t releases_in_flight = 4;
  // Joins and leaves of lines (a semaphore's wait joins every permit's line, and leaves all but
  // the one it got): two each, as takes, on the acquisition lane as their single commands.
  static constexpr std::size_t joins_in_flight = 2;
  static constexpr std::size_t leaves_in_flight = 2;

  // How long a gathering (below) waits at most for a member it has not heard from: one that ends
  // before its first store call (cancelled, timed out, refused) never makes one.
  static constexpr std::chrono::milliseconds gather_hold{10};

  explicit grouping_store(std::shared_ptr<lock_store> inner);

  // A set the caller is about to take or release as one (docs/design.md section 14: a rw_lock
  // writer's permits, a multi-lock's first look, a set's release), each name by its own operation.
  // The takes and releases of `names` are held until every name has made its first store call (a
  // take or release joins the command; anything else, a read, a hand-over, a parked
  // turn, only counts as heard from), or `hold` passed, or the handle returned is dropped;
  // then what was held goes out at once as one command of each kind, whatever is in flight. Each
  // statement keeps its own outcome and rules: holding only delays a send (a take's clock started
  // before the call; its bound is checked when it goes). A name already in another open gathering
  // stays in that one.
  std::shared_ptr<void> gather(const boost::asio::any_io_executor& ex, const std::vector<std::string>& names,
                               std::chrono::milliseconds hold = gather_hold);
  // `name`'s operation made a store call that cannot join the gathered command, or will make none
  // for a while (parked behind another acquire of the name in this provider). Heard from by a
  // gathering of first reads (below) too.
  void heard_from(const std::string& name);
  // The first reads of `names` as one find (read_gathering.hpp): a semaphore's or a writer's waits.
  std::shared_ptr<void> gather_reads(const boost::asio::any_io_executor& ex, const std::vector<std::string>& names,
                                     std::chrono::milliseconds hold = gather_hold) {
    return reads_->open(ex, names, hold);
  }

  // Grouped: a take, a swap or a blind one (not a hand-over, which rides the maintenance lane
  // alone), every release, every join and leave of a line. Only
  // takes and releases are held for a gathering: a line write counts as heard from.
  void take(const take_request& t, reply<outcome<bool>> r) override;
  void release(const std::string& name, const std::string& owner, std::int64_t token, reply<outcome<bool>> r) override;
  void join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                 reply<outcome<bool>> r) override;
  void leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) override;

  // Statements that rode in another operation's command: the commands saved (stats::server_calls).
  // Also the reads that rode in a gathering's find (read_gathering.hpp).
  std::uint64_t saved() const noexcept { return saved_.load(std::memory_order_relaxed) + reads_->saved(); }
  // Gatherings that went at their bound, some member never heard from (for tests).
  std::uint64_t gatherings_at_bound() const noexcept { return at_bound_.load(std::memory_order_relaxed); }

  // Every other operation goes through as it is (forwarding_store); a read first counts as heard
  // from, and may ride in a gathering of first reads.
  void read(const std::string& name, read_mode m, reply<outcome<lock_doc>> r) override {
    heard_by_takes(name);
    if (reads_->hold(name, m, r)) return;
    inner_->read(name, m, std::move(r));
  }

 private:
  struct pending {
    grouped_write write;
    reply<outcome<bool>> done;
  };
  // One per kind: kinds never share a command (takes and releases run on different lanes, and a
  // line write's outcome is judged by other rules).
  struct queue {
    explicit queue(std::size_t limit) : in_flight_limit(limit) {}
    const std::size_t in_flight_limit;
    std::deque<pending> waiting;
    std::size_t in_flight = 0;
  };

  // The takes and releases held for one set, and the names not heard from yet.
  struct gathering {
    std::unordered_set<std::string> awaited;
    std::vector<pending> takes, releases;
    bool open = true;
  };

  // Under mu_: `p` held in its name's open gathering (true), or not gathered. Out: a gathering
  // this completed, to send.
  bool hold_if_gathered(pending& p, bool take, std::shared_ptr<gathering>& complete);
  // heard_from, for the gatherings of takes and releases only.
  void heard_by_takes(const std::string& name);
  // Under mu_: marks `name` heard from; its gathering when that was the last name awaited.
  std::shared_ptr<gathering> note_heard(const std::string& name);
  // Ends `g` (if still open: true) and sends what it held.
  bool close(const std::shared_ptr<gathering>& g);
  // Under mu_: ends `g` and takes its held operations out.
  void end_gathering(gathering& g, std::vector<pending>& takes, std::vector<pending>& releases);
  // Sends `ops` of `q` now, whatever is in flight, at most max_per_command per command.
  void send_now(queue& q, std::vector<pending> ops);

  void submit(queue& q, pending p);
  // Under mu_: the next command's operations, at most one per document, oldest first; takes past
  // their bound leave the queue into `expired` instead.
  std::vector<pending> next_command(queue& q, std::vector<pending>& expired);
  void send(queue& q, std::vector<pending> ops);
  void finished(queue& q);

  // A leave never overtakes the join of the same entry (docs/design.md section 14), or the join
  // could land after it and leave an entry nobody will use (a head that never comes, a window for
  // every waiter behind it). A leave whose join still waits in the queue takes that join out (it
  // was never sent: nothing of it can land); one whose join is in flight waits for its reply.
  // Owner ids have a fixed length, so owner + name names an entry.
  static std::string entry_key(const line_write& l) { return l.owner + l.name; }
  // The joins of `ops`, answered: leaves waiting for them go on.
  void joins_answered(const std::vector<pending>& ops);

  const std::shared_ptr<read_gatherer> reads_;
  std::mutex mu_;
  queue takes_{takes_in_flight}, releases_{releases_in_flight}, joins_{joins_in_flight}, leaves_{leaves_in_flight};
  std::unordered_map<std::string, std::shared_ptr<gathering>> gathered_;  // name: its open gathering
  std::unordered_multiset<std::string> joins_out_;                        // entry keys of joins in flight
  std::unordered_map<std::string, std::vector<pending>> leaves_after_join_;  // entry key: leaves waiting
  std::atomic<std::uint64_t> saved_{0}, at_bound_{0};
};

}  // namespace mongolock::detail
