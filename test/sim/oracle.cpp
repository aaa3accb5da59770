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
    if (forced_out(name, l) || forced_out(name, *h.l)) continue;
    fail(name, "two holders: " + who + " " + when + " token " + std::to_string(l.fencing_token()) + " while " + h.who +
                   "'s token " + std::to_string(h.l->fencing_token()) + " is in force");
  }
}

bool oracle::forced_out(const std::string& name, const ml::lease& l) const {
  const auto it = forced_out_.find({name, l.owner_id()});
  return it != forced_out_.end() && it->second && ml::detail::access::state(l)->published_deadline() <= *it->second;
}

void oracle::force_out(const std::string& name, const std::string& owner) {
  auto& deadline = forced_out_[{name, owner}];
  deadline.reset();
  for (const holder& h : live_[name]) {
    if (h.l->owner_id() != owner) continue;
    // A renewal sent before now may still succeed (it landed before the force) and move the
    // deadline on, to less than now + expiry by the holder's clock; none sent later can.
    const inside in(*h.p);
    deadline = ml::detail::boot_clock::now() + ml::detail::access::state(*h.l)->expiry();
  }
}

void oracle::forcing(const std::string& name, bool immediate) {
  trace_.note("operator", name, std::string("force release") + (immediate ? " (immediate)" : "") + " sent");
  if (immediate) ++immediate_asked_[name];
}

void oracle::forced(const std::string& name, bool immediate, bool failed, const std::string& former) {
  trace_.note("operator", name, std::string("force release") + (immediate ? " (immediate)" : "") + ": " +
                                    (failed ? "failed" : former.empty() ? "nothing to take" : "took it from " + former.substr(0, 8)));
  if (immediate && !failed && former.empty() && immediate_asked_[name] > 0) --immediate_asked_[name];  // took nothing
}

void oracle::force_applied(const std::string& name, const std::string& owner, bool immediate) {
  trace_.note("server", name, std::string("a force release") + (immediate ? " (immediate)" : "") + " takes it from " +
                                  owner.substr(0, 8));
  taken_from_.emplace(name, owner);
  if (!immediate) {
    replaced_[name].insert(owner);
    return;
  }
  // The driver's resend of an immediate force release that a failover rolled back takes the lock
  // from the same owner again; any other needs an immediate one asked for.
  if (!forced_out_.count({name, owner})) {
    if (immediate_asked_[name] == 0) {
      trace_.note("server", name, "no immediate force release was asked for: its overlaps count");
      return;
    }
    --immediate_asked_[name];
  }
  if (owner != ml::detail::broken_owner) return force_out(name, owner);
  // The placeholder freed: the holders it replaced may still be in force (provider.hpp).
  for (const auto& replaced : replaced_[name]) force_out(name, replaced);
  replaced_.erase(name);
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
  // Forced out before its acquire was granted (its take had landed, its answer had not): a grant
  // below the next holder's token, which may overlap it until it notices (provider.hpp), to at
  // most a deadline one expiry from now by its clock.
  bool forced_before = false;
  if (auto f = forced_out_.find({name, l.owner_id()}); f != forced_out_.end() && !f->second) {
    const inside in(p);
    f->second = ml::detail::boot_clock::now() + ml::detail::access::state(l)->expiry();
    forced_before = true;
  }
  auto& last = last_token_[name];
  if (l.fencing_token() <= last && !forced_before)
    fail(name, who + " granted token " + std::to_string(l.fencing_token()) + " after a grant of token " +
                   std::to_string(last));
  last = std::max(last, l.fencing_token());
  exclusive(who, l, "granted");
  live_[name].push_back({&p, who, &l});
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
