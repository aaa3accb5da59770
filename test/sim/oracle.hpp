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
  // The user let `l` go (about to release it, or to drop it).
  void dropped(const mongolock::lease& l);
  // Whether `l` of process `p` is in force now.
  static bool in_force(process& p, const mongolock::lease& l);

  // A leader of election `name` as seen by `who` (the leader itself, or an observer): every
  // sight of one term names one owner and one value, the winner's process.
  void leads(const std::string& who, const std::string& name, const mongolock::leader_info& seen);
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

  trace& trace_;
  std::map<std::string, std::vector<holder>> live_;
  std::map<std::string, std::int64_t> last_token_;
  std::map<std::string, std::string> kind_of_;  // a name's kind, from its first grant
  std::set<std::pair<std::string, std::string>> granted_to_;  // (name, owner)
  std::map<std::pair<std::string, std::int64_t>, mongolock::leader_info> terms_;  // (election, term)
  std::optional<std::string> failure_;
  std::string failing_name_;
  std::size_t grants_ = 0;
};

}  // namespace sim
