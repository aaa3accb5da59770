#pragma once
// What a release does next, decided without I/O (docs/design.md sections 7 and 8): to the head of
// the line, to a local waiter, or plainly; after a hand-off that missed, one majority read and one
// more try; and how each outcome settles. The engine's driver (src/engine/fsm_driver.hpp, with
// release.cpp's adapter) performs each action against the store and feeds what happened back
// through resume(), one release_input each; the adapter carries out the action's give-backs.
// Unit-tested in test/sansio/release_fsm_test.cpp.
//
// Safety rules it enforces:
// - a hand-off to the head of the line never frees the head's lock, whatever its reply: on an
//   error only this lease's own (owner, token) is given back, and the head finds out by reading;
// - a local hand-off is granted only if its reply came before sent + expiry - margin of the new
//   lease (a late one is given back), and never on an error (a write-concern error may be rolled
//   back; an ambiguous one is given back as an unconfirmed take);
// - a release that matched nothing is a release only if a majority read shows the document free
//   at this lease's token; otherwise another owner held it since: lost.
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/clocks.hpp"
#include "model/lease_clock.hpp"
#include "model/lock_document.hpp"

namespace mongolock::detail {

// The lease being released, as its take, hand-off or last renewal left it.
struct release_params {
  std::string name, owner;
  std::int64_t token = 0;
  std::chrono::milliseconds expiry{0};  // the lease's own
  std::vector<line_entry> line_seen;    // the line as far as the lease saw it (the head first)
  std::int64_t tickets_seen = 0;        // the document's next ticket as last seen
  bool others_in_line = false;          // others may wait in line (a local hand-off would not match)
};

// The first parked acquire of this provider waiting for the name, when this lease holds the
// name's turn: the driver offers it at each decision, with a fresh owner id for it.
struct local_waiter {
  std::string owner;                    // a new owner id
  std::chrono::milliseconds expiry{0}, margin{0}, renew_every{0};  // its lock options
};

struct release_action {
  enum class kind {
    hand_to_line,  // take(request()): the head of the line becomes the holder (`enrolled`: and
                   // the local waiter joins the line)
    hand_over,     // take(request()): the local waiter becomes the holder
    release,       // release (owner, token)
    read,          // read the lock with majority read concern
    done,          // settled with `ec` and `why`
  };
  enum class handed { none, to_line, to_local };

  kind what = kind::release;
  // Done: the caller's outcome. `handed`: a hand-off landed (the driver passes the turn on).
  boost::system::error_code ec;
  std::string why;
  handed to = handed::none;
  bool late = false;               // to_local: the reply came after the new lease's bound
  // Effects, carried out before the action.
  bool count_release = false;      // a release command was answered
  bool give_back_own = false;      // release (owner, token) in the background
  bool give_back_handed = false;   // release the local hand-off's (owner, token + 1), unconfirmed
  bool leave_enrolled = false;     // take the enrolled waiter's entry out of the line
};

// What happened since the last action: the one input of resume(). The release began, a write
// (hand_to_line, hand_over or release) answered, or a read did. `local`: the local waiter the
// driver offers at a decision (start, and a read when decides_after_read()).
struct release_input {
  using time_point = boot_clock::time_point;
  enum class kind { start, written, read };

  kind what = kind::start;
  time_point sent{}, now{};  // written: when the write left, and when its reply came
  outcome<bool> wrote;       // written
  outcome<lock_doc> doc;     // read
  std::optional<local_waiter> local;

  static release_input start(std::optional<local_waiter> local) {
    return {kind::start, {}, {}, {}, {}, std::move(local)};
  }
  static release_input written(outcome<bool> r, time_point sent, time_point now) {
    return {kind::written, sent, now, std::move(r), {}, {}};
  }
  static release_input read(outcome<lock_doc> r, std::optional<local_waiter> local) {
    return {kind::read, {}, {}, {}, std::move(r), std::move(local)};
  }
};

class release_fsm {
 public:
  using time_point = boot_clock::time_point;

  explicit release_fsm(release_params p);

  release_action resume(const release_input& in);

  // The take to send for hand_to_line and hand_over (the driver adds the holder metadata of a
  // hand_over, as for any take of this provider).
  const take_request& request() const { return request_; }
  // The local hand-off's bound: a reply after it is late.
  time_point bound(time_point sent) const { return grant_bound(sent, local_expiry_, local_margin_, local_renew_every_); }
  // Whether the read in flight leads to a new decision (the driver then offers its local waiter).
  bool decides_after_read() const { return step_ == step::reread; }

 private:
  enum class step { idle, to_line, to_local, plain, reread, settle_read };

  release_action start(const std::optional<local_waiter>& local);
  // The reply to a hand_to_line, hand_over or release; `sent`: when it left.
  release_action on_written(const outcome<bool>& r, time_point sent, time_point now);
  release_action on_read(const outcome<lock_doc>& r, const std::optional<local_waiter>& local);

  release_action decide(const std::optional<local_waiter>& local);
  release_action hand_to_line(const std::optional<local_waiter>& local);
  release_action hand_over(const local_waiter& local);
  release_action plain();
  release_action after_a_miss();
  release_action on_handed_to_line(const outcome<bool>& r);
  release_action on_handed_over(const outcome<bool>& r, time_point sent, time_point now);
  release_action on_released(const outcome<bool>& r);
  release_action settle_matched_nothing(const outcome<lock_doc>& r);
  bool token_full() const { return p_.token == std::numeric_limits<std::int64_t>::max(); }
  take_request handing(std::string owner, std::chrono::milliseconds expiry) const;

  release_params p_;
  step step_ = step::idle;
  bool may_retry_ = true;  // a hand-off that misses reads and tries once more
  take_request request_;
  std::chrono::milliseconds local_expiry_{0}, local_margin_{0}, local_renew_every_{0};
};

}  // namespace mongolock::detail
