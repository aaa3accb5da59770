#pragma once
// The rules a simulated run is judged by, in true time (docs/design.md section 11, "Simulation").
// Exclusion: at no true time do two processes hold leases on one name that are both in force (not
// released, not lost, before their local deadline by their own clocks: what async_guard and
// time_left() tell their work). Fencing: grants of a name carry strictly increasing tokens in the
// order they happen. A crashed process holds nothing (it can do no work).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mongolock/election.hpp"
#include "mongolock/lease.hpp"
#include "model/clocks.hpp"
#include "model/lock_document.hpp"
#include "trace.hpp"
#include "world.hpp"

namespace sim {

class oracle {
 public:
  explicit oracle(trace& t) : trace_(t) {}

  // Process `p` (`who`) was granted `l` (its user's acquire of `resource`, a `kind`, completed
  // with it: a plain lock, or a part of a semaphore, rw_lock or multi-lock). A name is one kind's:
  // a lock granted where a semaphore or rw_lock was (or the other way round) fails the run.
  void granted(process& p, const std::string& who, const mongolock::lease& l, const std::string& resource,
               const std::string& kind);
  // A step of the work under `l`, which its user saw still in force: nobody else may hold the name.
  void step(process& p, const std::string& who, const mongolock::lease& l);
  // A step of work that `l`'s guard runs (lease::async_guard): the work never looks at the lease,
  // so the guard must have cancelled it when the lease ended (design.md section 6), and nobody
  // else may hold the name. A process resumed from a pause is the exception the design states: its
  // timers and its watchdog fall due together and either may run first (only fencing protects the
  // resource then), so a step at the very moment it resumes, past its deadline, is let pass.
  void guarded_step(process& p, const std::string& who, const mongolock::lease& l);
  // The user let `l` go (about to release it, or to drop it).
  void dropped(const mongolock::lease& l);
  // Whether `l` of process `p` is in force now.
  static bool in_force(process& p, const mongolock::lease& l);

  // A leader of election `name` as seen by `who` (the leader itself, or an observer): every
  // sight of one term names one owner and one value, the winner's process.
  void leads(const std::string& who, const std::string& name, const mongolock::leader_info& seen);
  // An operator's force release of `name` (provider::async_force_release) is sent, and answered.
  void forcing(const std::string& name, bool immediate);
  void forced(const std::string& name, bool immediate, bool failed, const std::string& former);
  // A force release applied at the server and took `name` from `owner` (memory_store::on_forced).
  // An immediate one frees the lock at once, so that the holder it took the lock from may overlap
  // the next one until it notices (provider.hpp: force_mode): from now on, an overlap with that
  // holder is let pass while its lease's deadline is within what a renewal sent before the force
  // can give it (less than one expiry on; one sent later would be one the document no longer
  // allowed). So is one with the
  // holders a default force release replaced by the placeholder it frees. A default one overlaps
  // nobody.
  void force_applied(const std::string& name, const std::string& owner, bool immediate);
  // Whether a force release took `name` from `owner`: a take of that owner need not be given back
  // (its document no longer names it).
  bool forced_from(const std::string& name, const std::string& owner) const {
    return taken_from_.count({name, owner}) > 0;
  }
  // A holder of `name` is about to record its run as token `token` (design.md section 13); the
  // record may land whatever the call's answer.
  void recording(const std::string& name, std::int64_t token) { recorded_.emplace(name, token); }
  // The run records in `name`'s committed states, oldest first: each is a token some holder
  // recorded, and while the document lives, none is below the one before it.
  void records_in(const std::string& name,
                  const std::vector<std::pair<mongolock::detail::steady_clock::time_point, mongolock::detail::lock_doc>>& states);
  void fail(const std::string& name, const std::string& what);
  // The document `name` is gone (the TTL monitor removed it, idle): the name may be taken as
  // another kind from now on.
  void removed(const std::string& name) { kind_of_.erase(name); }
  const std::optional<std::string>& failure() const { return failure_; }
  const std::string& failing_name() const { return failing_name_; }
  std::size_t grants() const { return grants_; }
  // Whether `owner` was granted `name` (a lock, a permit, a part of a set).
  bool granted_to(const std::string& name, const std::string& owner) const {
    return granted_to_.count({name, owner}) > 0;
  }

 private:
  struct holder {
    process* p;
    std::string who;
    const mongolock::lease* l;
  };
  void exclusive(const std::string& who, const mongolock::lease& l, const char* when);

  // Each (name, owner) an immediate force release took the lock from, directly or through the
  // placeholder it freed: the latest deadline its lease can have (none yet: its acquire was not
  // granted yet), up to which its overlaps are let pass.
  std::map<std::pair<std::string, std::string>, std::optional<mongolock::detail::boot_clock::time_point>> forced_out_;
  std::map<std::string, std::set<std::string>> replaced_;     // by name: the owners its placeholder replaced
  // By name: immediate force releases the operator sent that have not taken the lock yet (only
  // those may: the library sends what the operator asked for).
  std::map<std::string, int> immediate_asked_;
  std::set<std::pair<std::string, std::string>> taken_from_;  // (name, owner): any force took it
  // Whether `l` of `name` was forced out and its deadline is within what it could reach.
  bool forced_out(const std::string& name, const mongolock::lease& l) const;
  void force_out(const std::string& name, const std::string& owner);

  trace& trace_;
  std::map<std::string, std::vector<holder>> live_;
  std::map<std::string, std::int64_t> last_token_;
  std::map<std::string, std::string> kind_of_;  // a name's kind, from its first grant
  std::set<std::pair<std::string, std::string>> granted_to_;  // (name, owner)
  std::set<std::pair<std::string, std::int64_t>> recorded_;    // (name, token)
  std::map<std::pair<std::string, std::int64_t>, mongolock::leader_info> terms_;  // (election, term)
  std::optional<std::string> failure_;
  std::string failing_name_;
  std::size_t grants_ = 0;
};

}  // namespace sim
