#pragma once
// The domain model (docs/design.md sections 1 and 7): the lock document as the engine sees it, its
// line, the requests that change it, what each command answers, and the token layout. Plain data
// and pure functions; it depends on no other layer.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/clocks.hpp"
#include "mongolock/limits.hpp"

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
// A failure of the library's own making (not a server's reply): `ambiguous` when a write may have
// been applied.
template <class T>
outcome<T> failure(boost::system::error_code ec, std::string message, bool ambiguous = false) {
  outcome<T> o;
  o.ec = ec;
  o.message = std::move(message);
  o.ambiguous = ambiguous;
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

// What a semaphore or reader-writer lock name was declared as (docs/design.md section 10): its kind
// and its number of permits, recorded by its first user in the document of the name itself and
// never changed, so that two programs cannot use one name with different numbers of permits (each
// would admit its own number of holders), nor one as a plain lock.
struct declaration {
  std::string kind;  // "semaphore", "rw_lock", or "lock" (the name's document is a plain lock's)
  std::int64_t permits = 0;
  bool operator==(const declaration&) const = default;
};
// "a semaphore of 3 permits", "a lock": for the reason of a declaration_mismatch.
inline std::string describe(const declaration& d) {
  if (d.kind == "lock") return "a lock";
  return "a " + d.kind + " of " + std::to_string(d.permits) + " permits";
}

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
  // Set when the document is a semaphore's or a rw_lock's declaration (section 10), not a lock:
  // no take ever matches it. A pointer, as `meta`: almost every document has none.
  std::shared_ptr<const declaration> declared;
};

// The local wall clock in ms, for informational fields and hints only; no decision about who may
// hold a lock ever depends on it.
inline std::int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(wall_clock::now().time_since_epoch()).count();
}

struct named_doc {
  std::string name;
  lock_doc doc;
};

// What hello has said for maxBsonObjectSize since MongoDB 1.8: the largest document, command or
// write statement a server takes (store/bson_sizes.hpp).
inline constexpr std::size_t default_max_bson_bytes = 16 * 1024 * 1024;

struct server_info {
  std::string version;      // buildInfo.version, e.g. "8.0.4"
  int max_wire_version = 0;
  std::size_t max_bson_bytes = default_max_bson_bytes;  // hello.maxBsonObjectSize
  // hello.localTime (0 if the server did not say) and this host's wall clock at the reply.
  std::int64_t local_time_ms = 0, client_time_ms = 0;
};

// Tokens of a lock document that the TTL clean-up removed stay above its last ones only while this
// host's clock is less than idle_cleanup behind the server's (docs/design.md section 1): a warning
// once it is behind by half of that, empty otherwise.
inline std::string clock_behind_warning(const server_info& s, std::chrono::seconds idle_cleanup) {
  using namespace std::chrono;
  if (s.local_time_ms == 0) return {};
  const auto behind = milliseconds{s.local_time_ms - s.client_time_ms};
  if (behind <= duration_cast<milliseconds>(idle_cleanup) / 2) return {};
  return "this host's clock is " + std::to_string(duration_cast<seconds>(behind).count()) +
         " s behind the server's, more than half of idle_cleanup (" + std::to_string(idle_cleanup.count()) +
         " s): a lock document the TTL clean-up removed may be created again with tokens below its last ones";
}

// One compare-and-swap (docs/design.md section 1). When `observed` exists: against exactly its
// (owner, token, beat) (a free one: (null, token)). When it does not (the document was seen
// missing, or was not read at all): the blind take, applied only to a free lock document with a
// token below `token` (and nobody in line, with `nobody_waiting`), or to no document (an upsert:
// it creates it); anything else (held, a line, a declaration, a token at or above ours) answers
// "not taken" (E11000).
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

// Whether the blind take `t` matches the document `existing` (docs/design.md section 1): a free
// lock document below its token, with nobody in line when it asks so; build_swap's filter. (No
// document at all it creates.)
inline bool blind_take_matches(const take_request& t, const lock_doc& existing) {
  return !existing.declared && existing.held.owner.empty() && existing.held.token < t.token &&
         (!t.nobody_waiting || existing.waiting == 0);
}

// A lease as the store knows it: the document `name` names `owner` with `token`.
struct held_lease {
  std::string name, owner;
  std::int64_t token = 0;
};

enum class read_mode {
  primary,   // the primary's latest state, never a take decided on it (status, list, renewal fallback)
  majority,  // the primary, majority read concern: every acquire read, re-checks, a declaration read
};


// The owner of a lock broken by force_release without `immediate`: not an owner id (those are
// 32 hex digits), never renewed. Waiters observe it as a silent holder, so the first new holder
// takes over a whole expiry + margin after seeing it, when the old holder's own deadline (at
// most expiry - margin after its last renewal, which came before the break) has passed.
inline constexpr const char* broken_owner = "(force-released)";

// Tokens (docs/design.md section 1): a take writes max(observed + 1, token_clock(its wall clock)),
// the wall clock in nanoseconds since 1970: no counter to draw from, so nothing runs out and no
// document is a hot spot; the clock decides nothing about exclusion. It lets a take of a document
// it did not read (the blind take) name a token above the document's in one round trip, and it
// puts a new life of a document (after the TTL clean-up, a wipe or a restore) above the last one.
// A reading past the cap (year 2189) is held there, so that a wildly wrong clock leaves 2^61
// tokens to count by one (each fences: a fenced write accepts every token up to the largest
// int64, the last next_token writes); a reading before 1970 is 1.
inline constexpr std::int64_t token_clock_cap = 3 * (std::int64_t{1} << 61);
static_assert(limits::max_fencing_token == std::numeric_limits<std::int64_t>::max(),
              "a fenced write accepts every token next_token can write");
inline std::int64_t token_clock(std::chrono::nanoseconds since_1970) {
  const auto ns = since_1970.count();
  return ns < 1 ? 1 : ns > token_clock_cap ? token_clock_cap : ns;
}
inline std::int64_t token_clock(std::chrono::system_clock::time_point now) {
  // Saturating: system_clock's range is wider than int64 nanoseconds on some platforms.
  using namespace std::chrono;
  const auto s = duration_cast<seconds>(now.time_since_epoch());
  if (s.count() >= token_clock_cap / 1'000'000'000) return token_clock_cap;
  if (s.count() < 0) return 1;
  return token_clock(duration_cast<nanoseconds>(now.time_since_epoch()));
}
// The token a take writes over a document whose token is `observed`, at the clock reading `clock`;
// nullopt when nothing is above `observed` (a document written by something else).
inline std::optional<std::int64_t> next_token(std::int64_t observed, std::int64_t clock) {
  if (observed == std::numeric_limits<std::int64_t>::max()) return std::nullopt;
  return std::max(observed + 1, clock);
}
// The wall-clock milliseconds a token was drawn at, if it came from token_clock (a token pushed
// past the clock by one-increments reads a little later): the release writes idle_since no
// earlier, so that the TTL clean-up removes a document only once the server's clock has passed its
// token by idle_cleanup (section 1).
inline std::int64_t token_ms(std::int64_t token) { return std::min(token, token_clock_cap) / 1'000'000; }

}  // namespace mongolock::detail
