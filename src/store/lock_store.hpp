#pragma once
// The store seam: every server operation the lock engine needs, one command each, behind a small
// interface. src/store/mongo_store.* implements it with libmongoc; the unit tests implement it
// in memory and break it on purpose (write-concern errors, late replies, hangs, stale reads).
//
// Each operation answers through `reply` exactly once, from any thread, possibly before the call
// returns. Nothing here decides anything: ambiguity, re-checks and give-backs are the engine's.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/grouped_write.hpp"
#include "model/lock_document.hpp"
#include "mongolock/error.hpp"

namespace mongolock::detail {

class lock_store {
 public:
  template <class R>
  using reply = std::function<void(R)>;

  virtual ~lock_store() = default;

  // Version check and TTL index, once per provider.
  virtual void prepare(reply<outcome<server_info>>) = 0;
  virtual void read(const std::string& name, read_mode, reply<outcome<lock_doc>>) = 0;
  // The documents of `names` in one find (_id $in), in the order of `names` (a missing one: not
  // `exists`): a semaphore's look at all its permits (docs/design.md section 10).
  virtual void read_each(const std::vector<std::string>& names, read_mode, reply<outcome<std::vector<lock_doc>>>) = 0;
  virtual void list(reply<outcome<std::vector<named_doc>>>) = 0;
  // value: true when applied; false when the lock was not as observed (lost the race).
  virtual void take(const take_request&, reply<outcome<bool>>) = 0;
  // Lease maintenance: never queued behind acquisition traffic. Renews every lease in `held`
  // (all with this `expiry`) in one command. value[i]: whether held[i]'s document still named
  // its (owner, token) and was updated; on an error, nothing is known about any of them.
  virtual void renew(const std::vector<held_lease>& held, std::chrono::milliseconds expiry,
                     reply<outcome<std::vector<bool>>>) = 0;
  virtual void release(const std::string& name, const std::string& owner, std::int64_t token,
                       reply<outcome<bool>>) = 0;
  // Frees whichever of the documents `names` names one of `owners` (any token): the names keep it
  // a lookup by _id, never a scan of the collection for an owner. value: how many were freed.
  // Pairs: names[i] is the document of owners[i]'s lease, so that a long list can go in parts
  // (engine/splitting_store.hpp), each freeing its own pairs.
  virtual void release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                              reply<outcome<std::int64_t>>) = 0;
  // Group commit (docs/design.md section 14): every statement of `writes` (all of one kind, each
  // on a different document) in one command, unordered, each writing its own `beat`. value[i]:
  // what became of writes[i]. On an error nothing is known about any of them, and every error
  // after sending is ambiguous (one statement's failure says nothing about the others').
  virtual void write_grouped(const std::vector<grouped_write>& writes,
                             reply<outcome<std::vector<grouped_outcome>>>) = 0;
  // Joins the lock's line with `ticket` (what the last read showed as the next one): applied
  // only if the document still says so (value false: someone joined first, or it is gone). A
  // value false that is also `ambiguous` was judged so by a read that may predate the write (a
  // grouped join, docs/design.md section 14): the entry may still have been written.
  virtual void join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                         reply<outcome<bool>>) = 0;
  // Leaves the line (an acquire that gives up); value false if `owner` was not in it.
  virtual void leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>>) = 0;
  // Shows that `owner` is still in line with `ticket` (a write, so that its success proves the
  // entry was there when it was applied); value false if it is not (handed the lock, or gone).
  virtual void refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                            reply<outcome<bool>>) = 0;
  // Sets the election value of the holder (owner, token); value false if it no longer holds it.
  virtual void proclaim(const std::string& name, const std::string& owner, std::int64_t token,
                        const std::string& value, reply<outcome<bool>>) = 0;
  // Records in the document that the holder (owner, token) completed its run (docs/design.md
  // section 13): last_run_token = token. value false if it no longer holds the lock.
  virtual void record_run(const std::string& name, const std::string& owner, std::int64_t token,
                          reply<outcome<bool>>) = 0;
  // Declares the name's own document `d` (docs/design.md section 10) unless it is there already;
  // value: what the document is afterwards: `d`, another declaration, or {"lock", 1} when it is a
  // lock's (read with majority read concern when writes are majority, only when it is not `d`).
  virtual void declare(const std::string& name, const declaration& d, reply<outcome<declaration>>) = 0;
  // Operator override: takes the lock from whoever holds it. value = the owner that was removed
  // (empty: nothing to do). `immediate`: free at once; otherwise hand it to broken_owner, which
  // nobody renews (a lock already broken so is left alone).
  virtual void force_release(const std::string& name, bool immediate, reply<outcome<std::string>>) = 0;
  // False once the store was shut down: background retries stop.
  virtual bool accepting() const noexcept = 0;
};

// A read_each reply of `asked` names, as one read's outcome per name in that order: each
// document, or the find's error for each, or server_unavailable for each when the find answered
// a different number of documents (a poll group's find, a gathering of first reads).
inline std::vector<outcome<lock_doc>> each_of_find(outcome<std::vector<lock_doc>> r, std::size_t asked) {
  const bool whole = !r.ec && r.value.size() == asked;
  std::vector<outcome<lock_doc>> each(asked);
  for (std::size_t i = 0; i < asked; ++i) {
    if (whole) {
      each[i].value = std::move(r.value[i]);
    } else if (r.ec) {
      each[i] = failure<lock_doc>(r.ec, r.message);
    } else {
      each[i] = failure<lock_doc>(make_error_code(errc::server_unavailable),
                                  "the find answered a different number of documents");
    }
  }
  return each;
}

}  // namespace mongolock::detail
