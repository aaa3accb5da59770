#pragma once
// One statement of a grouped write (docs/design.md section 14): a take of an existing document or
// a release, sent with others of its kind in one `update` command of many statements. The server
// answers only how many statements matched in all; when that is every statement, each applied.
// Otherwise a read of the named documents judges each statement by `judge`.
#include <cstdint>
#include <string>

#include "model/lock_document.hpp"

namespace mongolock::detail {

struct grouped_write {
  enum class kind { take, release };
  kind what = kind::take;
  take_request take;   // what == take: a swap of an existing document (never an insert)
  held_lease release;  // what == release: frees the document `name` if it names (owner, token)
  // The heartbeat this statement writes, drawn by the store as it builds the command: random, so
  // a document that carries it carries this statement's write and no other (section 2, step 2).
  std::int64_t beat = 0;

  const std::string& name() const { return what == kind::take ? take.name : release.name; }
};

enum class grouped_outcome {
  applied,  // the document carries this statement's own write
  missed,   // it did not apply, or applied and was overwritten by another holder since
  unknown,  // the read cannot tell: the caller treats it as a write whose reply was lost
};

// What `after`, the statement's document as read after a command that matched fewer statements
// than it sent, says of the statement (section 14). Applied only on this statement's own write
// (owner, token and its beat): our owner id and token alone can also be an earlier take of the
// same acquire or a hand-off to us from the line, whose clocks the acquire's re-check knows and
// this read does not. Unknown when the document names our owner id by another write, or still
// shows the state the statement was written against: the read may come from a node whose
// majority snapshot predates the command (a new primary), or the statement failed alone. Missed
// otherwise: the document moved on to a state no applied write of ours could have left.
inline grouped_outcome judge(const grouped_write& w, const lock_doc& after) {
  if (!after.exists) return grouped_outcome::missed;  // a take or a release leaves its document there
  const auto& h = after.held;
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
