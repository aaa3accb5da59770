#pragma once
// The domain model (docs/design.md sections 1 and 7): the lock document as the engine sees it, its
// line, the requests that change it, what each command answers, and the token layout. Plain data
// and pure functions; it depends on no other layer.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/boot_clock.hpp"

namespace mongolock::detail {

// What a holder wrote last: who, with which fencing token, its heartbeat (a fresh random value at
// every write) and its own lease length, stored in the document.
struct held_state {
  std::string owner;
  std::int64_t token = 0;
  std::int64_t beat = 0;
  std::chrono::milliseconds expiry{0};  // the holder's own lease length, stored in the document

  bool operator==(const held_state&) const = default;
};

template <class T>
struct outcome {
  boost::system::error_code ec;
  std::string message;      // the server's or driver's message, credentials removed
  bool ambiguous = false;   // a write that may have been applied although it failed
  T value{};
};

template <class T>
outcome<T> success(T v) {
  outcome<T> o;
  o.value = std::move(v);
  return o;
}
template <class T, class U>
outcome<T> failure_from(const outcome<U>& other) {
  outcome<T> o;
  o.ec = other.ec;
  o.message = other.message;
  o.ambiguous = other.ambiguous;
  return o;
}

// Who holds the lock, for operators: the holder's host name, process id and optional label.
// Written with each take and removed at release; informational only, never compared.
struct holder_meta {
  std::string host;
  std::int64_t pid = 0;
  std::string label;
  // An election's leader value (election.hpp): written by proclaim after the take, removed by
  // every take and release, so a document shows only the value its current holder proclaimed.
  std::string value;
};

// A waiting acquire in the lock's line (docs/design.md section 7): its owner id and its ticket.
struct line_entry {
  std::string owner;
  std::int64_t ticket = 0;
  bool operator==(const line_entry&) const = default;
};
// Longest line a waiter joins; beyond it, waiters wait unregistered (reads only).
inline constexpr std::size_t max_line = 32;

struct lock_doc {
  bool exists = false;
  held_state held;  // held.owner empty = free
  // The waiting line, ordered by ticket (the head first); `tickets`: the next ticket to hand
  // out; `waiting`: how many are in line (kept in step with `line` by every update).
  std::vector<line_entry> line;
  std::int64_t tickets = 0, waiting = 0;
  // Null while free. A pointer: the acquire FSM keeps lock_docs in every waiter, which need
  // none of it (72 bytes a copy inline, 16 as a pointer).
  std::shared_ptr<const holder_meta> meta;
  std::int64_t idle_since_ms = 0;   // informational (releaser's wall clock)
  std::int64_t acquired_at_ms = 0;  // informational (holder's wall clock)
  std::int64_t renewed_at_ms = 0;   // holder's wall clock at its last renewal: a hint, never a verdict
  // The fencing token of the last run its holder recorded as completed (record_run; docs/design.md
  // section 13), 0 if none: written under that holder's (owner, token), kept by every later write.
  std::int64_t last_run_token = 0;
};

// The local wall clock in ms, for informational fields and hints only; no decision about who may
// hold a lock ever depends on it.
inline std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

struct named_doc {
  std::string name;
  lock_doc doc;
};

// What a semaphore or reader-writer lock name was declared as (docs/design.md section 10): its kind
// and its number of permits, recorded by its first user and never changed, so that two programs
// cannot use one name with different numbers of permits (each would admit its own number of
// holders).
struct declaration {
  std::string kind;  // "semaphore", "rw_lock", or "lock" (a plain lock, an election, a multi-lock member)
  std::int64_t permits = 0;
  bool operator==(const declaration&) const = default;
};
// What a plain lock's name is declared as: a name is one kind of thing, so a plain lock and a
// semaphore or rw_lock of one name (which share no document) cannot both exist.
inline declaration plain_lock_declaration() { return {"lock", 1}; }
// "a semaphore of 3 permits", "a lock": for the reason of a declaration_mismatch.
inline std::string describe(const declaration& d) {
  if (d.kind == "lock") return "a lock";
  return "a " + d.kind + " of " + std::to_string(d.permits) + " permits";
}

struct server_info {
  std::string version;      // buildInfo.version, e.g. "8.0.4"
  int max_wire_version = 0;
};

// One compare-and-swap: insert when `observed` does not exist, else swap against exactly
// observed's (owner, token, beat).
struct take_request {
  std::string name, owner;
  std::int64_t token = 0;
  std::chrono::milliseconds expiry{0};
  lock_doc observed;
  holder_meta meta;
  // A local hand-off (docs/design.md section 7): `observed` is this provider's own lease, released
  // and taken in the same update. Matched on (owner, token) alone, as a release is (a renewal of
  // that lease may still land after it ended), and sent on the maintenance lane.
  bool hand_over = false;
  // The line (docs/design.md section 7). `nobody_waiting`: match only if nobody joined since the
  // read (`waiting` as observed; 0 also matches a missing field). `leaving`: entries this take
  // removes, each matched on its ticket (ours as the head, or a head that never came to take the
  // lock).
  bool nobody_waiting = false;
  std::vector<line_entry> leaving;
  // A hand-off to the head of the line may also put the releaser's next local waiter in line
  // (docs/design.md section 7): this entry, whose ticket is the document's `tickets` as last seen
  // (the update then requires it and raises it by one).
  std::optional<line_entry> enroll;
  // The take's bound (section 4): a reply after it is never a grant. A take still unsent then is
  // not sent at all (a grouped take waits for a command, docs/design.md section 14).
  std::optional<boot_clock::time_point> send_by;
};

// A lease as the store knows it: the document `name` names `owner` with `token`.
struct held_lease {
  std::string name, owner;
  std::int64_t token = 0;
};

enum class read_mode {
  primary,   // the primary's latest state, never a take decided on it (status, list, renewal fallback)
  majority,  // the primary, majority read concern: every acquire read, re-checks, the epoch
};


// The owner of a lock broken by force_release without `immediate`: not an owner id (those are
// 32 hex digits), never renewed. Waiters observe it as a silent holder, so the first new holder
// takes over a whole expiry + margin after seeing it, when the old holder's own deadline (at
// most expiry - margin after its last renewal, which came before the break) has passed.
inline constexpr const char* broken_owner = "(force-released)";

// Token layout: the high 32 bits are an epoch from the collection's counter, the low 32 bits
// count takes within that epoch.
inline constexpr std::int64_t token_low_mask = 0xffffffff;
inline std::int64_t first_token_of(std::int64_t epoch) { return (epoch << 32) | 1; }
// The coarse clock that seeds epochs (docs/design.md section 1): a fresh epoch is at least one
// above the number of 10-second units since 1970, so a collection that was wiped (dropped,
// restored, emptied by hand) and drew fewer than one epoch per 10 s in its previous life still
// hands out tokens above that life's. 10 s units reach 2^31 only in the year 2650; the reading is
// capped at 2^30 (year 2310) so that a wildly wrong clock can burn at most half of the epoch space.
inline constexpr std::chrono::seconds epoch_clock_unit{10};
inline constexpr std::int64_t max_epoch_floor = std::int64_t{1} << 30;
inline std::int64_t epoch_floor(std::chrono::seconds since_1970) {
  const std::int64_t units = since_1970 / epoch_clock_unit;
  return units < 0 ? 0 : units > max_epoch_floor ? max_epoch_floor : units;
}
inline std::int64_t epoch_floor(std::chrono::system_clock::time_point now) {
  return epoch_floor(std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()));
}
// A take that would carry into the epoch bits needs a fresh epoch instead.
inline bool needs_new_epoch(const lock_doc& observed) {
  return !observed.exists || (observed.held.token & token_low_mask) == token_low_mask;
}

}  // namespace mongolock::detail
