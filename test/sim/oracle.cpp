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
  for (const holder& h : live_[l.name()]) {
    if (h.l == &l || !in_force(*h.p, *h.l)) continue;
    fail(l.name(), "two holders: " + who + " " + when + " token " + std::to_string(l.fencing_token()) + " while " +
                       h.who + "'s token " + std::to_string(h.l->fencing_token()) + " is in force");
  }
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

void oracle::dropped(const ml::lease& l) {
  auto& v = live_[l.name()];
  std::erase_if(v, [&](const holder& h) { return h.l == &l; });
}

}  // namespace sim
