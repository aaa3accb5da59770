#include "workload.hpp"

#include <algorithm>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "model/clocks.hpp"
#include "primitives/compose.hpp"

namespace sim {

namespace asio = boost::asio;
namespace ml = mongolock;
using boost::system::error_code;
using std::chrono::milliseconds;

namespace {
constexpr auto tuple_await = asio::as_tuple(asio::use_awaitable);

asio::awaitable<void> sleep_for(ns d) {
  ml::detail::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(tuple_await);
}

milliseconds ms(ns d) { return std::chrono::duration_cast<milliseconds>(d); }
}  // namespace

workload::workload(process& p, std::string who, ml::provider prov, rng r, oracle& o, trace& t, workload_options wo)
    : p_(p), who_(std::move(who)), provider_(std::move(prov)), rng_(r), extra_(wo.extra_seed), oracle_(o), trace_(t), o_(std::move(wo)) {}

void workload::start() {
  for (int i = 0; i < o_.users; ++i) {
    ++running_;
    asio::co_spawn(p_.io, user(rng_.fork()), asio::detached);
  }
  if (!o_.election.empty()) {
    ++running_;
    asio::co_spawn(p_.io, observer(), asio::detached);
  }
}

// What a user holds: one lease, a set (a multi-lock's, a rw_lock writer's) or a leadership.
struct workload::holding {
  ml::lease one;
  ml::multi_lease many;
  ml::leadership leader;
  std::vector<const ml::lease*> parts() const {
    std::vector<const ml::lease*> v;
    if (one) v.push_back(&one);
    if (leader) v.push_back(&leader.get_lease());
    if (many)
      for (const auto& l : many.leases()) v.push_back(&l);
    return v;
  }
};

template <class Value, class Surface>
asio::awaitable<std::tuple<error_code, Value>> workload::acquire(rng& r, const Surface& surface, const std::string& name,
                                                                 std::string& how) {
  const auto wait = ms(r.between(ns{0}, o_.wait_max));
  const auto began = ml::detail::steady_clock::now();
  if (trace_.detailed()) trace_.detail(who_, name, "  begins an acquire of " + std::to_string(wait.count()) + " ms");
  const ns paused_before = p_.paused_total;
  std::tuple<error_code, Value> got;
  switch (r.below(4)) {
    case 0: {
      how = "acquire_for " + std::to_string(wait.count()) + " ms";
      got = co_await surface.async_acquire_for(wait, tuple_await);
      // A pause of the process holds its timers back too, by its own clock's length of it.
      const ns frozen = p_.clock.local_length_of(p_.paused_total - paused_before);
      // A timeout of 0 is one look, bounded by the driver's timeouts as a try is (acquire_surface.hpp).
      // A set's two give-backs are each waited for up to a grace past the deadline (design.md section 8).
      const ns grace = std::is_same_v<Value, ml::multi_lease> ? 2 * ns{ml::detail::give_back_grace} : ns{0};
      // A campaign's timeout bounds its acquire; the proclaim after it is bounded by the driver's
      // timeouts (election.hpp), which the memory store does not have.
      const bool campaign = std::is_same_v<Value, ml::leadership>;
      const bool late = ml::detail::steady_clock::now() - began > wait + o_.timeout_slack + frozen + grace;
      if (!campaign && wait.count() > 0 && late)
        oracle_.fail(name, who_ + " " + how + " completed after " + seconds(ml::detail::steady_clock::now() - began) +
                               " (" + std::get<0>(got).message() + ")");
      break;
    }
    case 1:
      how = "try";
      got = co_await surface.async_try_acquire(tuple_await);
      break;
    case 2: {
      how = "acquire cancelled after " + std::to_string(wait.count()) + " ms";
      asio::cancellation_signal cancel;
      ml::detail::steady_timer at(co_await asio::this_coro::executor, wait);
      at.async_wait([&cancel](error_code e) {
        if (!e) cancel.emit(asio::cancellation_type::terminal);
      });
      got = co_await surface.async_acquire(asio::bind_cancellation_slot(cancel.slot(), tuple_await));
      at.cancel();
      break;
    }
    default:
      how = "acquire";
      got = co_await surface.async_acquire(tuple_await);
      break;
  }
  co_return got;
}

ml::rw_lock workload::rw_lock(const std::string& name) const {
  ml::rw_options o;
  o.max_readers = o_.readers;
  return provider_.create_rw_lock(name, o);
}

void workload::quiet_for(ns d) { quiet_until_ = ml::detail::steady_clock::now().time_since_epoch() + d; }

// Sleeps out the quiet stretch, if one is under way, in steps that see a stop.
asio::awaitable<void> workload::keep_quiet() {
  for (ns now; !stopping_ && (now = ml::detail::steady_clock::now().time_since_epoch()) < quiet_until_;)
    co_await sleep_for(std::min(quiet_until_ - now, o_.think_max));
}

asio::awaitable<void> workload::user(rng r) {
  while (!stopping_) {
    co_await sleep_for(r.between(ns{0}, o_.think_max));
    co_await keep_quiet();
    if (stopping_) break;
    ++operations_;
    // What to take: a plain lock, most often; whatever else this run has.
    std::vector<int> kinds{0, 0};
    if (!o_.semaphore.empty()) kinds.push_back(1);
    if (!o_.rw.empty()) kinds.push_back(2), kinds.push_back(3);
    if (o_.multi && o_.names.size() >= 2) kinds.push_back(4);
    if (!o_.election.empty()) kinds.push_back(5);
    std::string name = o_.names[r.below(o_.names.size())], how;
    std::string kind = "lock";
    error_code ec;
    holding h;
    switch (kinds[r.below(kinds.size())]) {
      case 0:
        if (o_.mix_kinds && r.chance(0.2)) name = r.chance(0.5) || o_.rw.empty() ? o_.semaphore : o_.rw;
        if (name.empty()) name = o_.names.front();
        std::tie(ec, h.one) = co_await acquire<ml::lease>(r, provider_.create_lock(name), name, how);
        break;
      case 1:
        name = o_.semaphore, kind = "semaphore";
        std::tie(ec, h.one) = co_await acquire<ml::lease>(r, provider_.create_semaphore(name, o_.permits), name, how);
        break;
      case 2: {
        name = o_.rw, kind = "rw_lock";
        how = "reader ";
        const auto side = rw_lock(name).reader();  // named: GCC 12 cannot keep a braced list across co_await
        std::tie(ec, h.one) = co_await acquire<ml::lease>(r, side, name, how);
        break;
      }
      case 3: {
        name = o_.rw, kind = "rw_lock";
        how = "writer ";
        const auto side = rw_lock(name).writer();
        std::tie(ec, h.many) = co_await acquire<ml::multi_lease>(r, side, name, how);
        break;
      }
      case 5: {
        name = o_.election, kind = "election";
        how = "campaign ";
        const auto candidate = provider_.create_election(name).candidate(who_);
        std::tie(ec, h.leader) = co_await acquire<ml::leadership>(r, candidate, name, how);
        break;
      }
      default: {
        auto first = r.below(o_.names.size()), second = (first + 1 + r.below(o_.names.size() - 1)) % o_.names.size();
        name = o_.names[first] + "+" + o_.names[second], kind = "multi";
        std::vector<std::string> both{o_.names[first], o_.names[second]};
        const auto set = provider_.create_multi_lock(std::move(both));
        std::tie(ec, h.many) = co_await acquire<ml::multi_lease>(r, set, name, how);
        break;
      }
    }
    trace_.note(who_, name, how + ": " + (ec ? ec.message() : "granted"));
    if (!ec) co_await hold(r, name, kind, std::move(h));
  }
  --running_;
}

// Follows the election's leaders until the users stop: each change it sees goes to the oracle.
// Each wait for a change is cancelled after a while, so that a stop is seen.
asio::awaitable<void> workload::observer() {
  auto leaders = provider_.create_election(o_.election).observe();
  while (!stopping_) {
    // Quiet with the users (a poll every tenth of a lease through an idle hour costs the corpus more
    // than the rest of the seed).
    co_await keep_quiet();
    asio::cancellation_signal cancel;
    ml::detail::steady_timer at(co_await asio::this_coro::executor, o_.think_max);
    at.async_wait([&cancel](error_code e) {
      if (!e) cancel.emit(asio::cancellation_type::terminal);
    });
    auto [ec, seen] = co_await leaders.async_next(asio::bind_cancellation_slot(cancel.slot(), tuple_await));
    at.cancel();
    if (trace_.detailed()) trace_.detail(who_, o_.election, "  observer's wait: " + ec.message());
    if (!ec && seen.term != 0) oracle_.leads(who_ + "'s observer", o_.election, seen);
    if (ec && ec != asio::error::operation_aborted) co_await sleep_for(o_.think_max / 4);
  }
  --running_;
}

// What is missing from a grant of `kind` on `resource` (empty if nothing): a rw_lock's writer
// holds NAME#w and every permit, a reader and a semaphore's holder one permit, a multi-lock each of
// its locks (design.md sections 8 and 10). The oracle judges each name alone, so a writer granted
// without one of the permits would stand beside a reader of it unseen.
std::string workload::missing(const std::string& resource, const std::string& kind, const holding& h) const {
  std::vector<std::string> got, want;
  for (const auto* l : h.parts()) got.push_back(l->name());
  std::sort(got.begin(), got.end());
  const bool set = static_cast<bool>(h.many);
  const int permits = kind == "semaphore" ? o_.permits : o_.readers;
  if (kind == "multi") {
    const auto plus = resource.find('+');
    want = {resource.substr(0, plus), resource.substr(plus + 1)};
  } else if (kind == "rw_lock" && set) {
    want.push_back(resource + "#w");
    for (int k = 1; k <= permits; ++k) want.push_back(resource + "#" + std::to_string(k));
  } else if (kind == "lock" || kind == "election") {
    want = {resource};
  } else {  // one permit: whichever it is
    for (int k = 1; k <= permits; ++k)
      if (got.size() == 1 && got[0] == resource + "#" + std::to_string(k)) want = got;
    if (want.empty()) want = {"one of " + resource + "#1.." + std::to_string(permits)};
  }
  std::sort(want.begin(), want.end());
  if (got == want) return {};
  std::string text = "holds";
  for (const auto& n : got) text += " " + n;
  text += "; its kind takes";
  for (const auto& n : want) text += " " + n;
  return text;
}

asio::awaitable<void> workload::hold(rng& r, const std::string& resource, const std::string& kind, holding h) {
  const auto parts = h.parts();
  if (const auto gap = missing(resource, kind, h); !gap.empty())
    oracle_.fail(resource, who_ + " granted a " + kind + " that " + gap);
  for (const auto* l : parts) oracle_.granted(p_, who_, *l, resource, kind);
  if (h.leader) {
    const ml::leader_info mine{
        .has_leader = true, .value = who_, .term = h.leader.term(), .owner = h.leader.get_lease().owner_id()};
    oracle_.leads(who_, resource, mine);
  }
  const ns until = ml::detail::steady_clock::now().time_since_epoch() + r.between(ns{0}, o_.hold_max);
  if (!h.leader && o_.guarded > 0 && extra_.chance(o_.guarded)) {
    // The work under the lease's guard (a set's: until any of its leases ends): its steps never
    // look at the lease.
    // Not a conditional expression of two co_awaits: GCC 12 miscompiles that (a corrupted heap).
    std::tuple<std::exception_ptr, bool> done;
    if (h.one)
      done = co_await h.one.async_guard(guarded_work(extra_.fork(), parts, until), tuple_await);
    else
      done = co_await h.many.async_guard(guarded_work(extra_.fork(), parts, until), tuple_await);
    const auto& [e, kept] = done;
    if (e) {
      // The guard ends the work with the lease's end (async_guard): lost, or released by us.
      error_code why = asio::error::fault;
      try {
        std::rethrow_exception(e);
      } catch (const boost::system::system_error& x) {
        why = x.code();
      } catch (...) {
      }
      trace_.note(who_, resource, "guarded work ended by its guard: " + why.message());
      if (why != ml::errc::lease_lost && why != ml::errc::released)
        oracle_.fail(resource, who_ + "'s guard ended its work with " + why.message() + ", not the lease's end");
      else if (o_.no_faults)
        oracle_.fail(resource, who_ + "'s guard ended its work in a run without faults: " + why.message());
    } else if (!kept) {  // the guard's own check (checked_work) and the oracle's in_force disagree
      oracle_.fail(resource, who_ + "'s guard reported work done that ended past its lease's end");
    }
  } else {
    co_await checked_work(r, parts, until);
  }
  if (h.one && kind == "lock" && o_.records > 0 && extra_.chance(o_.records)) co_await record(resource, h.one);
  for (const auto* l : parts) oracle_.dropped(*l);
  if (r.chance(0.2)) {
    trace_.note(who_, resource, "drops the lease");
    h = holding{};  // released in the background
    co_return;
  }
  error_code ec;
  if (h.one)
    std::tie(ec) = co_await h.one.async_release(tuple_await);
  else if (h.leader)
    std::tie(ec) = co_await h.leader.async_resign(tuple_await);
  else
    std::tie(ec) = co_await h.many.async_release(tuple_await);
  trace_.note(who_, resource, "release: " + (ec ? ec.message() : std::string("freed")));
}

asio::awaitable<bool> workload::checked_work(rng& r, const std::vector<const ml::lease*>& parts, ns until) {
  while (ml::detail::steady_clock::now().time_since_epoch() < until) {
    co_await sleep_for(r.between(ns{0}, o_.hold_max / 4));
    const auto lost = std::find_if(parts.begin(), parts.end(), [&](const ml::lease* l) { return !oracle::in_force(p_, *l); });
    if (lost != parts.end()) {
      trace_.note(who_, (*lost)->name(), "lease lost: " + ((*lost)->status() ? (*lost)->status().message() : "past its local deadline"));
      if (o_.no_faults) oracle_.fail((*lost)->name(), who_ + " lost a lease in a run without faults");
      co_return false;
    }
    for (const auto* l : parts) oracle_.step(p_, who_, *l);
  }
  co_return true;
}

asio::awaitable<bool> workload::guarded_work(rng r, std::vector<const ml::lease*> parts, ns until) {
  while (ml::detail::steady_clock::now().time_since_epoch() < until) {
    ml::detail::steady_timer t(co_await asio::this_coro::executor, r.between(ns{0}, o_.hold_max / 4));
    const auto [ec] = co_await t.async_wait(tuple_await);
    if (ec) co_return false;  // cancelled: the guard saw the lease end
    for (const auto* l : parts) oracle_.guarded_step(p_, who_, *l);
  }
  co_return std::all_of(parts.begin(), parts.end(), [&](const ml::lease* l) { return oracle::in_force(p_, *l); });
}

// Records the run (design.md section 13), whatever the lease's state: the library must refuse a
// lease that ended, and the document keeps the record only of a holder that still held it.
asio::awaitable<void> workload::record(const std::string& resource, ml::lease& l) {
  oracle_.recording(resource, l.fencing_token());
  const auto [ec] = co_await l.async_record_completion(tuple_await);
  trace_.note(who_, resource, "records its run, token " + std::to_string(l.fencing_token()) + ": " +
                                  (ec ? ec.message() : std::string("recorded")));
}

}  // namespace sim
