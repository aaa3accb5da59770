#pragma once
// One statement of a grouped write (docs/design.md section 14): a take of an existing document or
// a release, sent with others of its kind in one `update` command of many statements. The server
// answers only how many statements matched in all; when that is every statement, each applied.
// Otherwise a majority read of the named documents tells which, by `shows_applied`.
#include <string>

#include "model/lock_document.hpp"

namespace mongolock::detail {

struct grouped_write {
  enum class kind { take, release };
  kind what = kind::take;
  take_request take;    // what == take: a swap of an existing document (never an insert)
  held_lease release;   // what == release: frees the document `name` if it names (owner, token)

  const std::string& name() const { return what == kind::take ? take.name : release.name; }
};

// Whether `after`, the statement's document read with majority read concern after the command,
// shows the statement applied. A take writes an owner id that is new per acquisition and a token
// only that acquire writes: if the document names both, this statement wrote them (nobody else
// writes that pair). A release leaves the document free at its own token, which only a release
// of that lease can (any take raises the token); free at that token therefore means released by
// this statement or an earlier attempt of the same release, which a release counts as released
// either way (section 4, "Releases"). A statement that applied and was overwritten before the read
// (the lock expired and was taken) reads as not applied: for a take, a lost race that nobody holds
// for us; for a release, the re-read of the release path decides.
inline bool shows_applied(const grouped_write& w, const lock_doc& after) {
  if (!after.exists) return false;
  if (w.what == grouped_write::kind::take)
    return after.held.owner == w.take.owner && after.held.token == w.take.token;
  return after.held.owner.empty() && after.held.token == w.release.token;
}

}  // namespace mongolock::detail
