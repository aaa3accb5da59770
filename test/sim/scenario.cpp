#include "scenario.hpp"

#include "asan.hpp"
#if MONGOLOCK_TEST_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "engine/access.hpp"
#include "engine/provider_impl.hpp"
#include "network.hpp"
#include "oracle.hpp"
#include "workload.hpp"

namespace sim {

namespace ml = mongolock;
using namespace std::chrono_literals;

namespace {

// The server's boot clock reads true time plus this (its records' times are on it).
constexpr ns server_boot = std::chrono::hours{1};
ns server_true(ml::detail::steady_clock::time_point at) { return at.time_since_epoch() - server_boot; }

// What one seed draws.
struct drawn {
  int processes = 2;
  std::vector<std::string> names;
  std::string semaphore, rw;
  int permits = 2, readers = 2;
  bool multi = false, mix_kinds = false;
  std::string election;
  // The TTL monitor removes documents idle for idle_cleanup (its least, 1 h; every host's), and
  // the users keep quiet that long and two minutes more at the start of the calm.
  bool ttl = false;
  // The server's maxBsonObjectSize lowered to 400 bytes and every name 100 bytes long: a release
  // of several leases and a find of several names then go in parts (engine/splitting_store.hpp:
  // one name each, under the 200-byte budget that limit leaves), each a call of its own, with
  // faults of its own; a single name's command still fits.
  bool small_commands = false;
  // How often a holder's work runs under its guard, and a plain lock's holder records its run
  // (workload_options::guarded, records): on some seeds, from a fourth stream.
  double guarded = 0, records = 0;
  // An operator's force releases of plain locks in the first phase (provider::async_force_release),
  // each in the default mode or (three in ten) immediate. Never in a run without faults (the cost
  // oracle counts every command as the auditor's).
  int forces = 0;
  net_faults net;
  int failovers = 0, outages = 0, pauses = 0, crashes = 0;
  // Processes shut down in the calm while their users still wait and work (a service stopping):
  // what a shutdown leaves behind is judged as any other call of the calm.
  int early_shutdowns = 0;
  bool fault_free = false;
  ns faulty{100s}, calm{60s};
  struct host {
    std::int64_t rate_ppm = 0;
    ns wall_offset{0};
    ml::lock_options options;
    int users = 1;
  };
  std::vector<host> hosts;
};

drawn draw(rng& r, const run_options& ro) {
  drawn d;
  d.processes = r.chance(0.1) ? static_cast<int>(r.between(7, 16)) : static_cast<int>(r.between(2, 6));
  const int names = static_cast<int>(r.between(1, 3));
  for (int i = 0; i < names; ++i) d.names.push_back(std::string(1, static_cast<char>('a' + i)));
  if (r.chance(0.4)) d.semaphore = "s", d.permits = static_cast<int>(r.between(1, 3));
  if (r.chance(0.4)) d.rw = "rw", d.readers = static_cast<int>(r.between(1, 3));
  d.multi = r.chance(0.3);
  d.mix_kinds = (!d.semaphore.empty() || !d.rw.empty()) && r.chance(0.3);
  auto& n = d.net;
  n.latency_typical = r.between(ns{500us}, ns{20ms});
  if (r.chance(0.5)) {
    n.tail = r.chance(0.5) ? 0.01 : 0.05;
    n.tail_max = r.between(ns{100ms}, ns{5s});
  }
  static constexpr double per_call[] = {0, 0.01, 0.05, 0.15};
  n.per_call = per_call[r.below(4)];
  n.lost_replies = r.chance(0.5);
  n.write_concern_errors = r.chance(0.5);
  n.hangs = r.chance(0.5);
  n.late_applies = r.chance(0.5);
  n.slow_requests = r.chance(0.5);
  n.refusals = r.chance(0.3);
  n.unavailable = r.chance(0.5);
  n.resends = r.chance(0.5);
  n.hang_max = r.between(ns{1s}, ns{40s});
  n.selection = r.between(ns{1s}, ns{10s});
  d.failovers = r.chance(0.5) ? static_cast<int>(r.between(1, 3)) : 0;
  d.outages = r.chance(0.4) ? static_cast<int>(r.between(1, 3)) : 0;
  d.pauses = r.chance(0.5) ? static_cast<int>(r.between(1, 4)) : 0;
  d.crashes = r.chance(0.3) ? static_cast<int>(r.between(1, std::max(1, d.processes / 2))) : 0;
  // One seed in ten has no fault at all: no lease may be lost there.
  d.fault_free = r.chance(0.1);
  if (d.fault_free) {
    n = net_faults{};
    n.latency_typical = r.between(ns{500us}, ns{20ms});
    d.failovers = d.outages = d.pauses = d.crashes = 0;
  }

  static constexpr std::chrono::seconds expiries[] = {3s, 5s, 10s, 30s};
  const bool mixed = r.chance(0.5);
  const auto common = expiries[r.below(4)];
  for (int i = 0; i < d.processes; ++i) {
    drawn::host h;
    h.options.expiry = mixed ? expiries[r.below(4)] : common;
    if (r.chance(0.3)) h.options.safety_margin = h.options.expiry / 5;
    h.users = static_cast<int>(r.between(1, 3));
    // Seconds apart; `ro.wall_spread` stretches the same draw to its own bound (hours apart: the
    // token clock's documented limit, design.md section 1).
    h.wall_offset = r.between(ns{-5s}, ns{5s});
    if (ro.wall_spread > ns{0})
      h.wall_offset = ns{static_cast<std::int64_t>(static_cast<double>(h.wall_offset.count()) *
                                                   (static_cast<double>(ro.wall_spread.count()) / 5e9))};
    d.hosts.push_back(h);
  }
  // The clock-rate rule (design.md section 6) for every holder H and waiter W: a waiter watches
  // the document's expiry (H's) plus its own margin, a holder stops its margin early, so clocks
  // within e of true time are safe while e < (m_W + m_H) / (2 E_H + m_W - m_H): m / E when all
  // hosts share one expiry and margin.
  double allowance = 1;
  for (const auto& holder : d.hosts)
    for (const auto& waiter : d.hosts) {
      const auto e = static_cast<double>(holder.options.expiry.count());
      const auto mh = static_cast<double>(holder.options.effective_margin().count());
      const auto mw = static_cast<double>(waiter.options.effective_margin().count());
      allowance = std::min(allowance, (mw + mh) / (2 * e + mw - mh));
    }
  // Each clock within the allowance of true time, some seeds at its edge.
  const auto edge = static_cast<std::int64_t>(allowance * 1e6 * 0.99);
  const bool extreme = r.chance(0.2);
  for (auto& h : d.hosts) h.rate_ppm = extreme ? (r.chance(0.5) ? edge : -edge) : r.between(-500, 500);
  return d;
}

// What later versions of the simulation draw, from a stream of their own: a seed keeps drawing what
// it drew before (the seeds kept in sim_tests still reach the cases they found).
void draw_more(drawn& d, rng& r) {
  d.early_shutdowns = !d.fault_free && r.chance(0.3) ? static_cast<int>(r.between(1, std::max(1, d.processes / 2))) : 0;
  // They come after every late write of the faults has landed (see `calm_from` in run_seed).
  if (d.early_shutdowns > 0) d.calm = 90s;
  if (r.chance(0.3)) d.election = "e";
  d.ttl = r.chance(0.2);
  if (d.ttl) {
    for (auto& h : d.hosts) h.options.idle_cleanup = std::chrono::hours{1};
    d.calm += std::chrono::hours{1} + 2min;
  }
}

// Drawn from a third stream, so that a seed draws everything else as before.
void draw_limits(drawn& d, rng& r) {
  d.small_commands = r.chance(0.25);
  if (!d.small_commands) return;
  const auto lengthen = [](std::string& name) {
    if (!name.empty()) name.resize(100, '-');
  };
  for (auto& n : d.names) lengthen(n);
  lengthen(d.semaphore);
  lengthen(d.rw);
  lengthen(d.election);
}

// Drawn from a fourth stream, as draw_limits.
void draw_work(drawn& d, rng& r) {
  d.guarded = r.chance(0.3) ? 0.5 : 0;
  d.records = r.chance(0.3) ? 0.5 : 0;
  d.forces = !d.fault_free && r.chance(0.25) ? static_cast<int>(r.between(1, 4)) : 0;
}

std::string describe(const drawn& d) {
  std::string s = std::to_string(d.processes) + " processes, " + std::to_string(d.names.size()) + " names" +
                  (d.semaphore.empty() ? "" : ", semaphore of " + std::to_string(d.permits)) +
                  (d.rw.empty() ? "" : ", rw_lock of " + std::to_string(d.readers) + " readers") +
                  (d.multi ? ", multi-locks" : "") + (d.mix_kinds ? ", plain locks on their names" : "") +
                  (d.election.empty() ? "" : ", an election") + (d.ttl ? ", a quiet hour and the TTL monitor" : "") +
                  (d.small_commands ? ", 100-byte names and a maxBsonObjectSize of 400 bytes" : "") +
                  (d.guarded > 0 ? ", work under guards" : "") + (d.records > 0 ? ", run records" : "") +
                  "; ";
  for (std::size_t i = 0; i < d.hosts.size(); ++i) {
    const auto& h = d.hosts[i];
    s += "p" + std::to_string(i) + "(E " + std::to_string(h.options.expiry.count()) + " ms, m " +
         std::to_string(h.options.effective_margin().count()) + " ms, " + std::to_string(h.rate_ppm) + " ppm, " +
         std::to_string(h.users) + " users) ";
  }
  const auto& n = d.net;
  s += "; latency " + seconds(n.latency_typical) + ", tail " + std::to_string(n.tail) + " up to " + seconds(n.tail_max) +
       "; per call " + std::to_string(n.per_call) + (n.lost_replies ? " lost-replies" : "") +
       (n.write_concern_errors ? " wc-errors" : "") + (n.hangs ? " hangs" : "") + (n.late_applies ? " late-applies" : "") +
       (n.slow_requests ? " slow-requests" : "") + (n.refusals ? " refusals" : "") + (n.unavailable ? " unavailable" : "") +
       (n.resends ? " resends" : "") + "; selection " + seconds(n.selection) + "; failovers " +
       std::to_string(d.failovers) + ", outages " + std::to_string(d.outages) + ", pauses " + std::to_string(d.pauses) +
       ", crashes " + std::to_string(d.crashes) + ", force releases " + std::to_string(d.forces) +
       ", shutdowns in the calm " + std::to_string(d.early_shutdowns) +
       (d.fault_free ? "; no fault at all" : "");
  return s;
}

// Every document name the server was called with. A grouped write's and a read_each's names are
// joined by commas (no name here has one).
std::set<std::string> names_called(const test::memory_store& store) {
  std::set<std::string> names;
  for (const auto& c : store.calls())
    for (std::size_t from = 0, to; from < c.name.size(); from = to + 1) {
      to = std::min(c.name.find(',', from), c.name.size());
      names.insert(c.name.substr(from, to - from));
    }
  return names;
}

// One run's parts, in the order they must outlive each other. The world's io_contexts, when
// destroyed, first destroy the handlers and coroutines still queued (a crashed process's users,
// with the leases and providers they hold: their releases reach the closed network and go no
// further) while the timer services still exist: so the trace and the network outlive the world,
// and the workloads, whose providers own timers of their processes, go before it.
struct run {
  std::unique_ptr<trace> tr;
  std::unique_ptr<network> net;
  world w;
  std::unique_ptr<oracle> judge;
  std::vector<std::unique_ptr<workload>> loads;
  std::vector<process*> hosts;
  std::vector<ml::detail::provider_impl*> providers;  // each host's
  std::vector<bool> shut;                              // each host's: its shutdown began
  explicit run(std::uint64_t seed) : w(seed) {}
  ~run() {
    if (net) net->close();
  }
};

}  // namespace

run_result run_seed(std::uint64_t seed, const run_options& ro) {
  run_result out;
  out.seed = seed;
  rng r(seed), more(~seed), limits(seed ^ 0x9e3779b97f4a7c15ULL), work(seed ^ 0xd1b54a32d192ed03ULL);
  drawn d = draw(r, ro);
  draw_more(d, more);
  draw_limits(d, limits);
  draw_work(d, work);
  if (ro.verbose) out.summary = describe(d);
  run x(r.next());
  world& w = x.w;
  x.tr = std::make_unique<trace>(w.time());
  if (ro.verbose) x.tr->set_detailed();
  x.judge = std::make_unique<oracle>(*x.tr);
  const ns wall_base = std::chrono::hours{24 * 20'000};
  auto& server = w.add_process(0, server_boot, wall_base);
  x.net = std::make_unique<network>(w, server, r.fork(), d.net, *x.tr);
  network& net = *x.net;
  if (d.small_commands) net.store().set_max_bson(400);

  for (int i = 0; i < d.processes; ++i) {
    const auto& h = d.hosts[static_cast<std::size_t>(i)];
    const std::string who = "p" + std::to_string(i);
    auto& p = w.add_process(h.rate_ppm, r.between(ns{1min}, ns{100h}), wall_base + h.wall_offset);
    const inside in(p);
    auto impl = std::make_shared<ml::detail::provider_impl>(p.io.get_executor(), net.link_for(p, who), h.options, nullptr);
    impl->meta.label = who;
    workload_options wo;
    wo.names = d.names;
    wo.semaphore = d.semaphore, wo.permits = d.permits;
    wo.rw = d.rw, wo.readers = d.readers;
    wo.multi = d.multi, wo.mix_kinds = d.mix_kinds;
    wo.election = d.election;
    wo.users = h.users;
    wo.no_faults = d.fault_free;
    wo.guarded = d.guarded, wo.records = d.records, wo.extra_seed = work.next();
    x.loads.push_back(std::make_unique<workload>(p, who, ml::detail::access::make_provider(impl), r.fork(), *x.judge,
                                                 *x.tr, wo));
    x.hosts.push_back(&p);
    x.providers.push_back(impl.get());
    x.shut.push_back(false);
    x.loads.back()->start();
  }

  // The faults of the first phase, at random times in it, on the server's (true) clock. A failover
  // or an outage drawn late in it lasts into the calm, until `faults_end`.
  ns faults_end = d.faulty;
  {
    const inside in(server);
    for (int i = 0; i < d.failovers; ++i) {
      const ns deposed = r.between(ns{0}, ns{2s}), election = r.between(ns{500ms}, ns{12s}),
               stale = r.between(ns{0}, ns{10s}), lag = r.between(ns{0}, ns{5s});
      const ns at = r.between(ns{0}, d.faulty);
      net.after(at, [&net, deposed, election, stale, lag] { net.failover(deposed, election, stale, lag); });
      faults_end = std::max(faults_end, at + deposed + election + stale);
    }
    for (int i = 0; i < d.outages; ++i) {
      const ns window = r.between(ns{500ms}, ns{20s});
      const ns at = r.between(ns{0}, d.faulty);
      net.after(at, [&net, window] { net.unreachable(window); });
      faults_end = std::max(faults_end, at + window);
    }
    for (int i = 0; i < d.pauses; ++i) {
      process* p = x.hosts[r.below(x.hosts.size())];
      const std::string who = x.loads[static_cast<std::size_t>(std::find(x.hosts.begin(), x.hosts.end(), p) - x.hosts.begin())]->who();
      const ns frozen = r.between(ns{100ms}, ns{40s});
      net.after(r.between(ns{0}, d.faulty), [&w, &x, p, who, frozen] {
        p->pause(w.now(), frozen);
        x.tr->note(who, "", "paused for " + seconds(frozen));
      });
    }
    for (int i = 0; i < d.crashes; ++i) {
      const std::size_t k = r.below(x.hosts.size());
      net.after(r.between(ns{0}, d.faulty), [&x, k] {
        if (x.hosts[k]->crashed) return;
        x.hosts[k]->crashed = true;
        x.tr->note(x.loads[k]->who(), "", "crashed");
#if MONGOLOCK_TEST_ASAN
        // A crashed process's memory is gone: here it stays, its leases still referring to their
        // provider (a cycle that only their end breaks), and LeakSanitizer is told so.
        __lsan_ignore_object(x.providers[k]);
#endif
      });
    }
  }

  // The operator's force releases, from a process of its own (made only when there are some, so
  // that the processes made after it draw as before).
  std::shared_ptr<ml::detail::provider_impl> operator_impl;
  if (d.forces > 0) {
    net.store().on_forced([&x](const std::string& name, const std::string& owner, bool immediate) {
      x.judge->force_applied(name, owner, immediate);
    });
    auto& op = w.add_process(0, 1h, wall_base);
    {
      const inside in(op);
      operator_impl = std::make_shared<ml::detail::provider_impl>(op.io.get_executor(), net.link_for(op, "operator"),
                                                                  ml::lock_options{}, nullptr);
    }
    const inside in(server);
    for (int i = 0; i < d.forces; ++i) {
      const auto name = d.names[work.below(d.names.size())];
      const bool immediate = work.chance(0.3);
      net.after(work.between(ns{0}, d.faulty), [&x, &op, &operator_impl, name, immediate] {
        const inside in(op);
        x.judge->forcing(name, immediate);
        ml::detail::access::make_provider(operator_impl)
            .async_force_release(name, immediate ? ml::force_mode::immediate : ml::force_mode::wait_out_holder,
                                 [&x, name, immediate](boost::system::error_code ec, std::string former) {
                                   x.judge->forced(name, immediate, ec.failed(), former);
                                 });
      });
    }
  }

  // A clean shutdown of live process k, its users stopped first (none begins another operation;
  // what they wait for or hold ends with it). `shutting` counts those under way.
  int shutting = 0;
  const auto shut_down = [&x, &shutting](std::size_t k) {
    if (x.hosts[k]->crashed || x.shut[k]) return;
    x.shut[k] = true;
    x.loads[k]->stop();
    const inside in(*x.hosts[k]);
    ++shutting;
    x.tr->note(x.loads[k]->who(), "", "shuts down");
    x.loads[k]->provider().async_shutdown([&shutting, &x, k](boost::system::error_code ec) {
      --shutting;
      if (ec) x.judge->fail("", x.loads[k]->who() + " shutdown failed: " + ec.message());
    });
  };
  {
    const inside in(server);
    for (int i = 0; i < d.early_shutdowns; ++i) {
      const std::size_t k = more.below(x.hosts.size());
      net.after(d.faulty + 50s + more.between(ns{0}, ns{40s}), [&shut_down, k] { shut_down(k); });
    }
    if (d.ttl) {
      const auto idle = d.hosts.front().options.idle_cleanup;
      net.after(d.faulty, [&x, idle] {
        for (std::size_t k = 0; k < x.loads.size(); ++k) {
          if (x.hosts[k]->crashed) continue;
          const inside in(*x.hosts[k]);
          x.loads[k]->quiet_for(x.hosts[k]->clock.local_length_of(idle + 2min));
        }
      });
      net.ttl_monitor(idle, [&x](const std::string& name) { x.judge->removed(name); });
    }
  }

  const auto failed = [&] { return x.judge->failure().has_value(); };
  const auto finish = [&]() -> run_result {
    out.trace_hash = x.tr->hash();
    out.events = x.tr->size();
    out.handlers = w.handlers();
    out.steps = w.steps();
    out.simulated_ms = std::chrono::duration_cast<std::chrono::milliseconds>(w.now()).count();
    out.grants = x.judge->grants();
    for (auto& l : x.loads) out.operations += l->operations();
    if (x.judge->failure()) {
      out.failure = x.judge->failure();
      out.failing_name = x.judge->failing_name();
      out.trace_excerpt = x.tr->lines_for(out.failing_name, ro.verbose ? 100'000 : 60);
      if (ro.verbose && !out.failing_name.empty()) {
        // The document's committed states, on the server's clock (true time plus its boot offset).
        out.trace_excerpt += "  the document's committed states:\n";
        for (const auto& [at, doc] : net.store().history_of(out.failing_name)) {
          out.trace_excerpt += "  " + seconds(server_true(at)) + "  " +
                               (doc.exists ? (doc.held.owner.empty() ? "free" : "held by " + doc.held.owner.substr(0, 8)) +
                                                 " token " + std::to_string(doc.held.token) + " beat " +
                                                 std::to_string(doc.held.beat) + " line " + std::to_string(doc.line.size())
                                           : "absent") +
                               "\n";
        }
      }
    }
    return out;
  };

  // 1. Faults.
  if (w.run_until(failed, d.faulty)) return finish();
  // 2. Calm: no new fault; every user finishes what it does (an acquire without a bound included).
  net.calm();
  if (w.run_until(failed, d.faulty + d.calm)) return finish();
  for (auto& l : x.loads) l->stop();
  const auto users_done = [&] {
    if (failed()) return true;
    for (std::size_t i = 0; i < x.loads.size(); ++i)
      if (!x.hosts[i]->crashed && x.loads[i]->running() > 0) return false;
    return true;
  };
  // Each user waits at most its hold and, for a lock whose holder or line head is gone, a window
  // for each (design.md section 7): the users of every process, one after another, bound it.
  ns window{0};
  int users = 0;
  for (const auto& h : d.hosts) {
    window = std::max<ns>(window, h.options.expiry + h.options.effective_margin());
    users += h.users;
  }
  const ns calm_bound = w.now() + 5min + users * (workload_options{}.hold_max + 3 * window);
  if (!w.run_until(users_done, calm_bound)) {
    for (std::size_t i = 0; i < x.loads.size(); ++i)
      if (!x.hosts[i]->crashed && x.loads[i]->running() > 0)
        x.judge->fail("", x.loads[i]->who() + " still has " + std::to_string(x.loads[i]->running()) +
                                           " users in an operation " + seconds(calm_bound - d.faulty - d.calm) +
                                           " after the calm");
    return finish();
  }
  if (failed()) return finish();
  // 3. A clean shutdown of every live process.
  for (std::size_t i = 0; i < x.loads.size(); ++i) shut_down(i);
  if (!w.run_until([&] { return shutting == 0; }, w.now() + 2min))
    x.judge->fail("", std::to_string(shutting) + " processes still shutting down after 2 min of calm");
  w.run_until_idle(w.now() + 10min);
  if (failed()) return finish();
  // Nothing is left held or in line by an acquire that made a call once every call succeeds: a
  // take that was not granted, a line entry of an acquire that ended and a lease that shutdown
  // ended are all given back (design.md section 7). That is from the end of the last fault (an
  // outage or a failover may last into the calm) plus a tail's latency and a hang: a call sent
  // before arrives and applies by then (a slow request, a late apply). What the faults left is
  // allowed for below.
  {
    const ns calm_from = faults_end + d.net.tail_max + d.net.hang_max + 1s;
    const auto& last_call = net.last_own_calls();
    const auto names = names_called(net.store());
    const auto left = [&](const std::string& name, const std::string& owner, const std::string& what) {
      auto it = last_call.find(owner);
      if (it != last_call.end() && it->second > calm_from)
        x.judge->fail(name, what + " by " + owner.substr(0, 8) + ", whose last call came at " + seconds(it->second) +
                                " (every call from " + seconds(calm_from) +
                                " on meets no fault), after every process shut down");
    };
    for (const auto& name : names) {
      x.judge->records_in(name, net.store().history_of(name));
      const auto doc = net.store().get(name);
      if (!doc.held.owner.empty()) left(name, doc.held.owner, "held");
      for (const auto& e : doc.line) left(name, e.owner, "left in line");
    }
  }
  if (failed()) return finish();
  // A take that applied and was never granted is given back, whatever the faults (design.md
  // section 4: a judged miss, a take abandoned in flight, a grant refused by a shutdown): its
  // process sends a release of its owner after it, unless the process crashed.
  {
    std::map<std::string, bool> crashed;
    for (std::size_t i = 0; i < x.loads.size(); ++i) crashed[x.loads[i]->who()] = x.hosts[i]->crashed;
    // Each name's committed (owner, token) states, with the last time each was committed. A take
    // applied if its state was committed when it arrived or later: a releaser's hand-off writes
    // the same pair (the head's owner, one above its token) when the head's clock is behind.
    std::map<std::string, std::map<std::pair<std::string, std::int64_t>, ns>> held_states;
    for (const auto& t : net.own_takes()) {
      const auto* who = net.process_of(t.owner);
      if (!who || crashed[*who] || x.judge->granted_to(t.name, t.owner) || x.judge->forced_from(t.name, t.owner))
        continue;
      auto [it, first] = held_states.try_emplace(t.name);
      if (first)
        for (const auto& [at, doc] : net.store().history_of(t.name))
          it->second[{doc.held.owner, doc.held.token}] = server_true(at);
      const auto state = it->second.find({t.owner, t.token});
      const bool applied = state != it->second.end() && state->second >= t.at;
      const auto back = net.last_give_back(t.owner);
      if (applied && (!back || *back < t.at))
        x.judge->fail(t.name, *who + "'s take of owner " + t.owner.substr(0, 8) + " token " + std::to_string(t.token) +
                                  ", arrived at " + seconds(t.at) +
                                  ", applied, was never granted and never given back");
    }
  }
  if (failed()) return finish();
  // 4. Nothing is stuck: a new process takes each lock within a window for its holder and one for
  // each line entry left by a waiter that is gone (design.md section 7), and frees it.
  // Its wall clock reads as the hosts' would without their offsets (the tokens' clock).
  auto& late = w.add_process(0, 1h, wall_base + w.now());
  std::shared_ptr<ml::detail::provider_impl> auditor;
  {
    const inside in(late);
    auditor = std::make_shared<ml::detail::provider_impl>(late.io.get_executor(), net.link_for(late, "auditor"),
                                                          ml::lock_options{}, nullptr);
  }
  // The longest line left on any document: each entry may be a waiter that is gone.
  const auto longest_line = [&] {
    std::size_t n = 0;
    for (const auto& c : net.store().calls())
      if (!c.name.empty()) n = std::max(n, net.store().get(c.name).line.size());
    return static_cast<int>(n);
  };
  auto lock = [&](const std::string& name) { return ml::detail::access::make_lock(auditor, name); };
  auto prov = ml::detail::access::make_provider(auditor);
  // Runs one acquire of the auditor's (`start(bound, handler)`), bounded by `parts` windows each.
  const auto take = [&](const std::string& what, int parts, auto start) {
    const ns bound = parts * (1 + longest_line()) * (window + 3s) + 10s;
    boost::system::error_code got = boost::asio::error::would_block;
    {
      const inside in(late);
      start(std::chrono::ceil<std::chrono::milliseconds>(bound), [&got, &x, what](boost::system::error_code ec, auto held) {
        got = ec;
        x.tr->note("auditor", what, ec ? "acquire: " + ec.message() : std::string("granted"));
        if (!ec) held.async_release([](boost::system::error_code) {});
      });
    }
    w.run_until([&] { return got != boost::asio::error::would_block; }, w.now() + bound + 1min);
    if (got)
      x.judge->fail(what, "after every process shut down, a new process could not take " + what + " within " +
                              seconds(bound) + " (" + got.message() + ")");
  };
  auto plain_names = d.names;
  if (!d.election.empty()) plain_names.push_back(d.election);  // an election's lock is a plain lock
  for (const auto& name : plain_names)
    take(name, 1, [&](auto t, auto h) { lock(name).async_acquire_for(t, std::move(h)); });
  // A semaphore or rw_lock whose name a plain lock took first is that lock's: the document says
  // which (a take that was never granted, its outcome unknown, may have fixed the kind).
  const auto plain = [&](const std::string& name) {
    const auto doc = net.store().get(name);
    return doc.exists && !doc.declared;
  };
  for (const auto& name : {d.semaphore, d.rw})
    if (!name.empty() && plain(name))
      take(name, 1, [&](auto t, auto h) { lock(name).async_acquire_for(t, std::move(h)); });
  if (!d.rw.empty() && !plain(d.rw))  // the writer takes every permit
    take(d.rw, 1 + d.readers, [&](auto t, auto h) {
      prov.create_rw_lock(d.rw, {.max_readers = d.readers}).writer().async_acquire_for(t, std::move(h));
    });
  if (!d.semaphore.empty() && !plain(d.semaphore)) {
    // Every permit, one acquire each, all held until the last.
    std::vector<ml::lease> permits;
    for (int i = 0; i < d.permits; ++i)
      take(d.semaphore, d.permits, [&](auto t, auto h) {
        prov.create_semaphore(d.semaphore, d.permits)
            .async_acquire_for(t, [&permits, h = std::move(h)](boost::system::error_code ec, ml::lease l) mutable {
              h(ec, ml::lease{});
              if (!ec) permits.push_back(std::move(l));
            });
      });
    const inside in(late);
    permits.clear();  // released in the background
  }
  if (failed() || !d.fault_free) return finish();
  // 5. The cost, in a run without faults, once the auditor's releases have landed: an uncontended
  // cycle (acquire, release) of each plain lock is the two commands command_count_suite counts (a
  // take and a release), and a semaphore's is three the first time (its declaration), then two.
  // Every other process is gone, so every command the server sees is the auditor's. First the
  // auditor's clock passes every token written so far: a token ahead of a taker's clock makes its
  // blind take miss and costs a read and a swap (design.md section 1), and the hosts' clocks may
  // run ahead of true time.
  {
    std::int64_t highest = 0;
    for (const auto& name : names_called(net.store())) highest = std::max(highest, net.store().get(name).held.token);
    bool rested = false;
    std::optional<ml::detail::steady_timer> rest;
    {
      const inside in(late);
      const auto behind = ns{highest} - ml::detail::wall_clock::now().time_since_epoch();
      rest.emplace(late.io, std::max(behind, ns{0}) + 1s);
      rest->async_wait([&rested](boost::system::error_code) { rested = true; });
    }
    w.run_until([&] { return rested; }, w.now() + 24h);
  }
  const auto cycle = [&](const std::string& what, std::size_t expected, auto start) {
    const auto before = net.store().wire().commands;
    boost::system::error_code got = boost::asio::error::would_block;
    ml::lease held;
    {
      const inside in(late);
      start([&](boost::system::error_code ec, ml::lease l) {
        if (ec) {
          got = ec;
          return;
        }
        held = std::move(l);
        held.async_release([&got](boost::system::error_code e) { got = e; });
      });
    }
    w.run_until([&] { return got != boost::asio::error::would_block; }, w.now() + 1min);
    w.run_for(1s);
    const auto commands = net.store().wire().commands - before;
    if (got)
      x.judge->fail(what, "an uncontended cycle of " + what + " failed: " + got.message());
    else if (commands != expected)
      x.judge->fail(what, "an uncontended cycle of " + what + " cost " + std::to_string(commands) + " commands, not the " +
                              std::to_string(expected) + " command_count_suite counts");
  };
  for (const auto& name : d.names)
    cycle(name, 2, [&](auto h) { lock(name).async_acquire_for(std::chrono::seconds{10}, std::move(h)); });
  if (!d.semaphore.empty() && !plain(d.semaphore)) {
    const auto sem = prov.create_semaphore(d.semaphore, d.permits);
    for (const std::size_t expected : {3u, 2u})
      cycle(d.semaphore, expected, [&](auto h) { sem.async_acquire_for(std::chrono::seconds{10}, std::move(h)); });
  }
  return finish();
}

}  // namespace sim
