#pragma once
// One statement of a grouped write (docs/design.md section 14): a take of an existing document, a
// release, or a join or leave of a lock's line (section 7), sent with others of its kind in one
// `update` command of many statements. The server answers only how many statements matched in
// all; when that is every statement, each applied. Otherwise a read of the named documents judges
// each statement by `judge` (a leave is never judged so: see there).
#include <algorithm>
#include <cstdint>
#include <string>

#include "model/lock_document.hpp"

namespace mongolock::detail {

// A write of one entry of a lock's line (section 7): a join with `ticket` (the next ticket the
// last read showed; applied only if the document still says so), or a leave (ticket unused).
struct line_write {
  std::string name, owner;
  std::int64_t ticket = 0;
};

struct grouped_write {
  enum class kind { take, release, join, leave };
  kind what = kind::take;
  take_request take;   // what == take: a swap, or a blind take (an upsert statement)
  held_lease release;  // what == release: frees the document `name` if it names (owner, token)
  // The heartbeat this statement writes (a take or a release), drawn by the store as it builds the
  // command: random, so a document that carries it carries this statement's write and no other
  // (section 2, step 2). A line write changes no beat.
  std::int64_t beat = 0;
  line_write line;  // what == join or leave

  const std::string& name() const {
    switch (what) {
      case kind::take: return take.name;
      case kind::release: return release.name;
      default: return line.name;
    }
  }
};

// Whether a short count is followed by a read to judge this statement. A leave's is not: an entry
// gone says nothing (left now, or never there: handed the lock, or removed as a head that never
// came), and an entry still there may be a read that predates the command; either way the caller
// does what it does for a leave that did not apply (section 7, point 8), so it is answered unknown.
inline bool judged_by_reading(const grouped_write& w) { return w.what != grouped_write::kind::leave; }

enum class grouped_outcome {
  applied,  // the document carries this statement's own write
  missed,   // it did not apply, or applied and was overwritten by another holder since
  unknown,  // the read cannot tell: the caller treats it as a write whose reply was lost
};

// A blind take (section 1) is judged as a swap is, except that the state it was written against is
// any that its filter admits: no document, or a free lock document below its token (with nobody in
// line, if it asked so). A read still showing one may predate the command, or the statement was
// never executed (the emulator stops an unordered command at an E11000): unknown.
inline grouped_outcome judge_blind(const grouped_write& w, const lock_doc& after) {
  const auto& t = w.take;
  const auto& h = after.held;
  if (after.exists && h.owner == t.owner && h.token == t.token && h.beat == w.beat) return grouped_outcome::applied;
  if (after.exists && h.owner == t.owner) return grouped_outcome::unknown;
  const bool admitted = !after.exists || blind_take_matches(t, after);
  return admitted ? grouped_outcome::unknown : grouped_outcome::missed;
}

// What `after`, the statement's document as read after a command that matched fewer statements
// than it sent, says of the statement (section 14). Applied only on this statement's own write
// (owner, token and its beat): our owner id and token alone can also be an earlier take of the
// same acquire or a hand-off to us from the line, whose clocks the acquire's re-check knows and
// this read does not. Unknown when the document names our owner id by another write, or still
// shows the state the statement was written against: the read may come from a node whose
// majority snapshot predates the command (a new primary), or the statement failed alone. Missed
// otherwise: the document moved on to a state no applied write of ours could have left.
//
// A join is never judged applied by a read: an entry of our owner id may be an earlier join of the
// same acquire, whose send the acquire keeps as the entry's clock (section 7, point 2), and a
// lock handed to us needs an entry some join of ours wrote. Both are unknown, as is a document
// whose next ticket is still the join's or older, or that is missing (a read that may predate the
// command, or the document's insert). Missed only when the ticket moved on and nothing names our
// owner id. Within one life of the document tickets only rise, so that is a lost race; but a
// document removed (TTL, section 1) and inserted again restarts them at 0, and a read that
// predates the removal could show a higher ticket than a join that applied in the new life. So
// the caller keeps the join's send as the earliest an entry of ours may have been written
// (acquire_fsm, resume of acquire_input::joined).
inline grouped_outcome judge(const grouped_write& w, const lock_doc& after) {
  if (!judged_by_reading(w)) return grouped_outcome::unknown;
  const auto& h = after.held;
  if (w.what == grouped_write::kind::join) {
    const auto& l = w.line;
    if (!after.exists) return grouped_outcome::unknown;
    const bool in_line = std::any_of(after.line.begin(), after.line.end(),
                                     [&](const line_entry& e) { return e.owner == l.owner; });
    if (h.owner == l.owner || in_line || after.tickets <= l.ticket) return grouped_outcome::unknown;
    return grouped_outcome::missed;
  }
  if (w.what == grouped_write::kind::take && !w.take.observed.exists) return judge_blind(w, after);
  if (!after.exists) return grouped_outcome::missed;  // a take or a release leaves its document there
  if (w.what == grouped_write::kind::take) {
    const auto& t = w.take;
    if (h.owner == t.owner && h.token == t.token && h.beat == w.beat) return grouped_outcome::applied;
    if (h.owner == t.owner) return grouped_outcome::unknown;
    if (h.owner == t.observed.held.owner && h.token == t.observed.held.token) return grouped_outcome::unknown;
    return grouped_outcome::missed;
  }
  const auto& r = w.release;
  if (h.owner.empty() && h.token == r.token && h.beat == w.beat) return grouped_outcome::applied;
  if (h.owner == r.owner && h.token == r.token) return grouped_outcome::unknown;
  return grouped_outcome::missed;
}

}  // namespace mongolock::detail
