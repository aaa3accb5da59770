#pragma once
// An in-memory lock store that can be broken on purpose: the seam below which the engine is
// tested for what the emulator cannot show (write-concern errors, lost and late replies, hangs,
// stale reads, duplicate keys). Semantics mirror src/store/mongo_commands.cpp: the same filters, the same
// counters. Every call is logged with the time it arrived and the time it was applied.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include "store/lock_store.hpp"

namespace test {

using mongolock::detail::lock_doc;
using mongolock::detail::outcome;

enum class op { prepare, read, read_each, list, take, renew, release, release_owners, force_release, join_line, leave_line, refresh_line, proclaim, declare, record_run, write_grouped };

struct fault {
  enum class kind {
    pass,                 // behave normally (to reach a later call of the same kind)
    write_concern_error,  // apply, then answer errc::ambiguous_result (a writeConcernError)
    stream_error_before,  // not applied; answer server_unavailable, ambiguous
    stream_error_after,   // applied; answer server_unavailable, ambiguous (the reply was lost)
    hang,                 // apply now, answer after `delay`
    apply_late,           // answer server_unavailable (ambiguous) now, apply after `delay`
    slow_request,         // arrive after `delay` (a request slow on its way): apply then, answer at once
    stale_read,           // answer a read with `stale` instead of the current document (a
                          // read_each: only as_of, each document as committed then); for
                          // write_grouped: its read after a short count shows the documents as
                          // they were before the command
    unavailable,          // not applied, nothing sent: server_unavailable
    refused,              // not applied: server_error, not ambiguous (the server refused the command)
    // Applied on the primary only, never acknowledged by a majority (a primary about to be
    // deposed): local reads see it, majority reads do not, rollback() undoes it. Answers
    // server_unavailable (ambiguous: the reply was lost) after `delay`.
    uncommitted,
    // libmongoc's retryable write (docs/design.md section 2): the write is applied as
    // `uncommitted`; at `delay` the primary is deposed (rollback()) and the driver resends the
    // identical command (the same beat and values) to the new primary, where it is applied again,
    // committed. `late` 0: the call answers with the resend's outcome at `delay`; otherwise it
    // answers server_unavailable (ambiguous) at `delay` and the resend lands at `delay + late`.
    // A write the driver never resends (a multi-document update: a renewal of 2+ leases,
    // release_owners) is rolled back at `delay` and answered ambiguous, never applied again.
    // Made with fault::resend().
    driver_resend,
  };
  fault(kind k, std::chrono::milliseconds d = std::chrono::milliseconds{0}, lock_doc s = {})
      : what(k), delay(d), stale(std::move(s)) {}
  // A stale_read that shows the document as a majority had committed it at `t` (a new primary's
  // majority snapshot that predates later commits): the store must keep_history().
  static fault as_of(mongolock::detail::steady_clock::time_point t, std::chrono::milliseconds d = std::chrono::milliseconds{0}) {
    fault f(kind::stale_read, d);
    f.snapshot_at = t;
    return f;
  }
  static fault resend(std::chrono::milliseconds failover_at, std::chrono::milliseconds late = std::chrono::milliseconds{0}) {
    fault f(kind::driver_resend, failover_at);
    f.late = late;
    return f;
  }
  kind what;
  std::chrono::milliseconds delay;
  lock_doc stale;
  std::chrono::milliseconds late{0};  // driver_resend: from the failover to the resend's landing
  std::optional<mongolock::detail::steady_clock::time_point> snapshot_at;  // stale_read: the committed state then
};

struct call_record {
  call_record(op w, std::string n = {}, std::string o = {}, std::int64_t t = 0)
      : what(w), name(std::move(n)), owner(std::move(o)), token(t) {}
  op what;
  std::string name, owner;
  std::int64_t token = 0;
  mongolock::detail::steady_clock::time_point at;  // when the call arrived
  std::string from;                                // a take's: the holder it swaps out, if any
  std::string enrolled;  // a hand-off's: the releaser's next local waiter it puts in line, if any
  // A grouped write's statements, each as the single call it stands for (a take, a release, a
  // join_line, a leave_line); a release_owners' owners, one part each.
  std::vector<call_record> parts;
};

class memory_store final : public mongolock::detail::lock_store {
 public:
  explicit memory_store(boost::asio::any_io_executor ex) : ex_(std::move(ex)) {}

  // Faults apply to the next calls of `o`, one each, in order.
  void inject(op o, fault f);
  // Direct access for arranging and checking state.
  void put(const std::string& name, lock_doc doc);
  // An operator's wipe of the collection (both views).
  void wipe();
  // One pass of MongoDB's TTL monitor over the idle_since index: every document whose idle_since
  // is at least `idle` before `now_ms` (the server's wall clock) is removed, from both views.
  // Returns the names the primary's view lost.
  std::vector<std::string> expire_idle(std::chrono::milliseconds idle, std::int64_t now_ms);
  lock_doc get(const std::string& name) const;
  std::vector<call_record> calls() const;
  // Called with each call's record as it arrives (on the caller's thread, outside the store's lock).
  void on_call(std::function<void(const call_record&)> f) { on_call_ = std::move(f); }
  // Called when a force release applies and takes `name` from `owner` (`immediate`: freed; else
  // handed to the placeholder), under the store's lock: the simulation's oracle learns which
  // holder an operator's force really took, and when.
  void on_forced(std::function<void(const std::string& name, const std::string& owner, bool immediate)> f) {
    on_forced_ = std::move(f);
  }
  std::size_t count(op o) const;
  // Documents in the collection, declarations included.
  std::size_t documents() const;
  // What a server would have received so far: one command per call (the provider's server check,
  // `prepare`, aside) plus the read that judges a grouped command whose count is short; and their
  // statements (a grouped command's each, one for every other command).
  struct wire_count {
    std::size_t commands = 0, statements = 0;
  };
  wire_count wire() const;
  // The server's maxBsonObjectSize (hello; 16 MiB by default): a release_owners or read_each whose
  // statement, built by the library's own builder, weighs more is refused, not applied
  // (errc::server_error), as libmongoc refuses it before sending. Lowered, a test meets the limit
  // with a few hundred names.
  void set_max_bson(std::size_t bytes) { max_bson_ = bytes; }
  // Every answer without a fault's own delay comes this late (bench/model.cpp's latency model).
  void set_latency(std::chrono::microseconds d) { latency_ = d; }
  void shut_down() { accepting_ = false; }
  // A failover: every write applied since the first `uncommitted` one is gone (the new primary
  // never had them); writes from now on are committed again.
  void rollback();
  // No server can be selected for `window` from now (an election, a primary's crash): a call that
  // arrives then is not applied and answers server_unavailable after `selection` (the driver's
  // server selection timeout), or when the window ends if that comes first (a real selection
  // would then succeed; answering "none" is the harder case for the caller).
  void unreachable_for(std::chrono::milliseconds window, std::chrono::milliseconds selection);
  // Whether an unreachable_for window is on now (a call then meets no fault queued for it: the
  // fault waits for the next call of its kind).
  bool unreachable_now() const;
  // From now on, every committed state of every document is kept with its time, for
  // fault::as_of (off by default: the benchmark's model runs millions of writes).
  void keep_history();
  // The committed states of `name` kept since keep_history(), with the times they were committed.
  std::vector<std::pair<mongolock::detail::steady_clock::time_point, lock_doc>> history_of(const std::string& name) const;

  void prepare(reply<outcome<mongolock::detail::server_info>> r) override;
  void read(const std::string& name, mongolock::detail::read_mode, reply<outcome<lock_doc>> r) override;
  void read_each(const std::vector<std::string>& names, mongolock::detail::read_mode,
                 reply<outcome<std::vector<lock_doc>>> r) override;
  void list(reply<outcome<std::vector<mongolock::detail::named_doc>>> r) override;
  void take(const mongolock::detail::take_request& t, reply<outcome<bool>> r) override;
  void renew(const std::vector<mongolock::detail::held_lease>& held, std::chrono::milliseconds expiry,
             reply<outcome<std::vector<bool>>> r) override;
  void release(const std::string& name, const std::string& owner, std::int64_t token, reply<outcome<bool>> r) override;
  void release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                      reply<outcome<std::int64_t>> r) override;
  void force_release(const std::string& name, bool immediate, reply<outcome<std::string>> r) override;
  void proclaim(const std::string& name, const std::string& owner, std::int64_t token, const std::string& value,
                reply<outcome<bool>> r) override;
  void join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                 reply<outcome<bool>> r) override;
  void record_run(const std::string& name, const std::string& owner, std::int64_t token,
                  reply<outcome<bool>> r) override;
  void declare(const std::string& name, const mongolock::detail::declaration& d,
               reply<outcome<mongolock::detail::declaration>> r) override;
  void leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) override;
  void write_grouped(const std::vector<mongolock::detail::grouped_write>& writes,
                     reply<outcome<std::vector<mongolock::detail::grouped_outcome>>> r) override;
  // Grouped commands that matched fewer statements than they sent (each then reads its documents).
  std::size_t grouped_reads() const { return grouped_reads_.load(); }
  // Grouped statements that went while a fault waited for a single call of their kind: the fault
  // did not reach them (the harness checks that none did, so no fault test passes without its fault).
  std::size_t bypassed_faults() const { return bypassed_.load(); }
  // Takes (alone or grouped) that arrived after their bound (take_request::send_by).
  std::size_t late_takes() const { return late_takes_.load(); }
  void refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                    reply<outcome<bool>> r) override;
  bool accepting() const noexcept override { return accepting_; }

 private:
  template <class T, class Apply>
  void write(op o, call_record rec, reply<outcome<T>> r, Apply apply);
  template <class T>
  void answer(reply<outcome<T>> r, outcome<T> v, std::chrono::milliseconds delay);
  std::optional<fault> next_fault(op o);
  // Answers `r` refused when a command of `bytes` is over max_bson_; whether it did.
  template <class T>
  bool too_large(std::size_t bytes, reply<outcome<T>>& r);
  std::atomic<std::size_t> max_bson_{mongolock::detail::default_max_bson_bytes};
  // Answers `r` "no server selected" when `f` is an `unavailable` fault; whether it did.
  template <class T>
  bool refused(const std::optional<fault>& f, reply<outcome<T>>& r);
  // Under mu_: one take or release on the current view (take and release, one each or grouped).
  // `beat` and `now_ms` are drawn once per call, so that a write applied twice (a rollback and the
  // driver's resend) writes the same values, as the resent command carries them.
  outcome<bool> apply_take(const mongolock::detail::take_request& t, std::int64_t beat, std::int64_t now_ms);
  outcome<bool> apply_release(const std::string& name, const std::string& owner, std::int64_t token, std::int64_t beat,
                              std::int64_t now_ms);
  // Under mu_: one join or leave of a line, alone or grouped.
  outcome<bool> apply_join(const std::string& name, const std::string& owner, std::int64_t ticket);
  outcome<bool> apply_leave(const std::string& name, const std::string& owner);
  std::atomic<std::size_t> grouped_reads_{0};
  std::atomic<std::chrono::microseconds> latency_{std::chrono::microseconds{0}};
  std::atomic<std::size_t> late_takes_{0};
  std::atomic<std::size_t> bypassed_{0};
  void note_arrival(const mongolock::detail::take_request& t) {
    if (t.send_by && *t.send_by <= mongolock::detail::boot_clock::now()) ++late_takes_;
  }
  void log(call_record rec);
  // Answers `r` server_unavailable when an unreachable_for window is on; whether it did.
  template <class T>
  bool out_of_reach(reply<outcome<T>>& r);
  // Under mu_: records the committed view's `name` (all documents if empty) after a write.
  void note_history();
  lock_doc committed_as_of(const std::string& name, mongolock::detail::steady_clock::time_point t) const;
  mongolock::detail::steady_clock::time_point unreachable_until_{};
  std::chrono::milliseconds selection_{0};
  bool keep_history_ = false;
  std::map<std::string, std::vector<std::pair<mongolock::detail::steady_clock::time_point, lock_doc>>> history_;

  boost::asio::any_io_executor ex_;
  mutable std::mutex mu_;
  std::map<std::string, lock_doc> docs_;  // the primary's latest state: what a local read sees
  // What a majority has acknowledged, while it differs from docs_ (after an `uncommitted` write):
  // what a majority read sees and a rollback returns to.
  std::optional<std::map<std::string, lock_doc>> committed_;
  // Under mu_: what a read in `mode` sees (a majority read: the committed view while it is apart).
  const std::map<std::string, lock_doc>& view_for(mongolock::detail::read_mode mode) const {
    return mode == mongolock::detail::read_mode::majority && committed_ ? *committed_ : docs_;
  }
  std::map<op, std::deque<fault>> faults_;
  std::vector<call_record> calls_;
  std::function<void(const call_record&)> on_call_;
  std::function<void(const std::string&, const std::string&, bool)> on_forced_;
  bool accepting_ = true;
  // Every take, renewal and release writes a beat no write carried before (as mongo_commands.cpp's random
  // ones), from a counter that no rollback() takes back. Drawn once per call, outside `apply`,
  // so that both views get the same one.
  std::atomic<std::int64_t> beats_{0};
  std::int64_t fresh_beat() { return ++beats_; }
};

}  // namespace test
