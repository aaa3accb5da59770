#include "oracle.hpp"

#include <algorithm>

#include "engine/access.hpp"
#include "engine/lease_state.hpp"
#include "model/clocks.hpp"

namespace sim {

namespace ml = mongolock;

bool oracle::in_force(process& p, const ml::lease& l) {
  if (p.crashed) return false;
  const inside in(p);
  if (l.status()) return false;
  // Before its local deadline by its own boot clock, whether or not its watchdog has run yet.
  return ml::detail::boot_clock::now() < ml::detail::access::state(l)->published_deadline();
}

void oracle::fail(const std::string& name, const std::string& what) {
  trace_.note("oracle", name, "FAIL " + what);
  if (failure_) return;  // the first failure is the one to replay
  failure_ = what;
  failing_name_ = name;
}

void oracle::exclusive(const std::string& who, const ml::lease& l, const char* when) {
  const auto& name = l.name();
  for (const holder& h : live_[name]) {
    if (h.l == &l || !in_force(*h.p, *h.l)) continue;
    if (forced_out_.count({name, h.l->owner_id()}) || forced_out_.count({name, l.owner_id()})) continue;
    const auto what = "two holders: " + who + " " + when + " token " + std::to_string(l.fencing_token()) + " while " +
                      h.who + "'s token " + std::to_string(h.l->fencing_token()) + " is in force";
    if (auto f = forcing_.find(name); f != forcing_.end() && f->second.calls > 0) {
      f->second.overlaps.emplace_back(l.owner_id(), h.l->owner_id(), what);
      continue;
    }
    fail(name, what);
  }
}

void oracle::forcing(const std::string& name, bool immediate) {
  trace_.note("operator", name, std::string("force release") + (immediate ? " (immediate)" : "") + " sent");
  if (!immediate) return;
  auto& f = forcing_[name];
  ++f.calls;
  for (const holder& h : live_[name])
    if (in_force(*h.p, *h.l)) f.candidates.insert(h.l->owner_id());
}

void oracle::forced(const std::string& name, bool immediate, bool failed, const std::string& former) {
  trace_.note("operator", name, std::string("force release") + (immediate ? " (immediate)" : "") + ": " +
                                    (failed ? "failed" : former.empty() ? "nothing to take" : "took it from " + former.substr(0, 8)));
  if (failed) failed_force_[name] = trace_.now();
  if (!former.empty()) taken_from_.emplace(name, former);
  if (!immediate) return;
  auto& f = forcing_[name];
  if (failed) {
    for (const auto& owner : f.candidates) forced_out_.emplace(name, owner);
  } else if (former == ml::detail::broken_owner) {
    // The placeholder of a default force release (provider.hpp): the holders it was put in place
    // of may still be in force, and freeing it lets the next one in beside them.
    for (const auto& [n, owner] : taken_from_)
      if (n == name) forced_out_.emplace(name, owner);
  } else if (!former.empty()) {
    forced_out_.emplace(name, former);
  }
  if (--f.calls > 0) return;
  for (const auto& [a, b, what] : f.overlaps)
    if (!forced_out_.count({name, a}) && !forced_out_.count({name, b})) fail(name, what);
  forcing_.erase(name);
}

void oracle::granted(process& p, const std::string& who, const ml::lease& l, const std::string& resource,
                     const std::string& kind) {
  ++grants_;
  const auto& name = l.name();
  // A multi-lock's parts are plain locks; a semaphore's and a rw_lock's are its permits.
  const auto& base = kind == "multi" ? name : resource;
  const auto& as = kind == "multi" ? std::string("lock") : kind;
  if (auto [it, first] = kind_of_.emplace(base, as); !first && it->second != as)
    fail(name, who + " granted " + base + " as a " + as + "; it was granted as a " + it->second);
  trace_.note(who, name, "granted token " + std::to_string(l.fencing_token()) + " owner " + l.owner_id().substr(0, 8));
  auto& last = last_token_[name];
  if (l.fencing_token() <= last)
    fail(name, who + " granted token " + std::to_string(l.fencing_token()) + " after a grant of token " +
                   std::to_string(last));
  last = std::max(last, l.fencing_token());
  exclusive(who, l, "granted");
  live_[name].push_back({&p, who, &l});
  if (auto f = forcing_.find(name); f != forcing_.end()) f->second.candidates.insert(l.owner_id());
  granted_to_.emplace(name, l.owner_id());
}

void oracle::leads(const std::string& who, const std::string& name, const ml::leader_info& seen) {
  if (!seen.has_leader) return;
  const auto [it, first] = terms_.try_emplace({name, seen.term}, seen);
  if (first) {
    trace_.note(who, name, "leader " + seen.value + " term " + std::to_string(seen.term));
    return;
  }
  if (it->second.owner != seen.owner || it->second.value != seen.value)
    fail(name, who + " saw term " + std::to_string(seen.term) + " led by " + seen.owner.substr(0, 8) + " (" +
                   seen.value + "); it was led by " + it->second.owner.substr(0, 8) + " (" + it->second.value + ")");
}

void oracle::step(process&, const std::string& who, const ml::lease& l) { exclusive(who, l, "working under"); }

void oracle::guarded_step(process& p, const std::string& who, const ml::lease& l) {
  if (in_force(p, l)) return exclusive(who, l, "working under its guard with");
  if (trace_.now() == p.paused_until) {
    trace_.note(who, l.name(), "guarded work steps on resuming past its deadline (design.md section 6)");
    return;
  }
  fail(l.name(), who + "'s guarded work went on past the end of its lease, token " + std::to_string(l.fencing_token()));
}

bool oracle::forced_from(const std::string& name, const std::string& owner, ns at) const {
  if (taken_from_.count({name, owner})) return true;
  const auto f = failed_force_.find(name);
  return f != failed_force_.end() && at <= f->second;
}

void oracle::records_in(const std::string& name,
                        const std::vector<std::pair<ml::detail::steady_clock::time_point, ml::detail::lock_doc>>& states) {
  std::int64_t last = 0;
  for (const auto& [at, doc] : states) {
    if (!doc.exists) {  // removed: the next life starts without a record
      last = 0;
      continue;
    }
    const auto r = doc.last_run_token;
    if (r != 0 && !recorded_.count({name, r}))
      return fail(name, "the document records a run of token " + std::to_string(r) + ", which no holder recorded");
    if (r < last)
      return fail(name, "the document's run record went back from token " + std::to_string(last) + " to " + std::to_string(r));
    last = r;
  }
}

void oracle::dropped(const ml::lease& l) {
  auto& v = live_[l.name()];
  std::erase_if(v, [&](const holder& h) { return h.l == &l; });
}

}  // namespace sim
