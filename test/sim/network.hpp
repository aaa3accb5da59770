#pragma once
// The server of a simulation and the way to it (docs/design.md section 11, "Simulation"): one
// memory store (test/support/memory_store.hpp: local and majority views, rollback, the driver's
// resend, stale snapshots) run by its own process on true time, and a link per simulated process
// that carries each call there and its reply back, with a latency drawn per message. Faults are
// drawn per call from the run's seed; failovers and unreachable windows are the scenario's.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memory_store.hpp"
#include "sim_random.hpp"
#include "trace.hpp"
#include "world.hpp"

namespace sim {

// What can go wrong on the way and at the server, drawn once per seed (a swarm: each seed turns on
// some of them).
struct net_faults {
  ns latency_min{std::chrono::microseconds{200}}, latency_typical{std::chrono::milliseconds{2}};
  double tail = 0;  // a message this likely takes up to `tail_max` instead
  ns tail_max{std::chrono::seconds{2}};
  double per_call = 0;  // a call this likely meets one of the faults below
  bool lost_replies = false, write_concern_errors = false, hangs = false, late_applies = false,
       slow_requests = false, refusals = false, unavailable = false, resends = false;
  ns hang_max{std::chrono::seconds{20}};
  ns selection{std::chrono::seconds{5}};  // the driver's server selection timeout
};

std::string_view op_name(test::op o);

class network {
 public:
  network(world& w, process& server, rng r, net_faults f, trace& t);
  test::memory_store& store() { return *store_; }
  process& server() { return server_; }
  // The store a process sees: its calls and replies go over the network.
  std::shared_ptr<mongolock::detail::lock_store> link_for(process& client, std::string who);

  // A failover, from now: for `deposed` the primary takes writes it will lose (answered as lost
  // replies), then it is rolled back and no server can be selected for `election`; then for
  // `stale_for`, a majority read may be served from a snapshot up to `lag` older than the failover
  // (each read by a coin: reads are not monotonic either). Call inside the server process.
  void failover(ns deposed, ns election, ns stale_for, ns lag);
  // No server can be selected for `window` (its calls wait for the selection timeout).
  void unreachable(ns window);
  // MongoDB's TTL monitor: every 60 s from now, documents idle for `idle` by the server's wall
  // clock are removed, each told to `removed` (call inside the server process).
  void ttl_monitor(ns idle, std::function<void(const std::string&)> removed);
  // From now on, calls meet no fault and no latency from the tail (what is in flight finishes as
  // drawn).
  void calm() { calm_ = true; }
  // The run is over: calls go nowhere (the processes' handlers, destroyed with the world, may
  // still make some).
  void close() { closed_ = true; }

  // Each owner's last call that its own process sent as its acquire (a take or a line write), in
  // true time: not a hand-off (a releaser's take that writes the next waiter in as holder), nor a
  // release of it.
  const std::map<std::string, ns>& last_own_calls() const { return last_own_call_; }
  // The process that sent an owner first ("p3"), or null.
  const std::string* process_of(const std::string& owner) const {
    const auto it = owner_of_.find(owner);
    return it == owner_of_.end() ? nullptr : &it->second;
  }
  // Each take an owner's own process sent (not a hand-off), as it arrived, in true time.
  struct take_sent {
    std::string name, owner;
    std::int64_t token = 0;
    ns at{0};
  };
  const std::vector<take_sent>& own_takes() const { return own_takes_; }
  // An owner's last release (single, or by owner ids) its own process sent, in true time.
  std::optional<ns> last_give_back(const std::string& owner) const {
    const auto it = last_give_back_.find(owner);
    return it == last_give_back_.end() ? std::nullopt : std::optional<ns>(it->second);
  }

  // Runs `f` on the server process `d` from now (call inside the server process).
  void after(ns d, std::function<void()> f);
  // Carries a call from `from` to the server and its reply back; `o`: its kind, for faults.
  // `who` and `name` (the lock, or empty) are for the trace of the fault it meets.
  template <class T, class Call>
  void carry(process& from, const std::string& who, test::op o, const std::string& name, bool majority_read, Call call,
             std::function<void(mongolock::detail::outcome<T>)> r);

 private:
  ns latency();
  // Puts the fault this call meets (if any) in the store's queue for its kind, just before it runs.
  void draw_fault(const std::string& who, test::op o, const std::string& name, bool majority_read);

  world& world_;
  process& server_;
  rng rng_;
  net_faults faults_;
  trace& trace_;
  std::shared_ptr<test::memory_store> store_;
  bool calm_ = false, closed_ = false;
  const std::string* sending_ = nullptr;           // who sends the call the store is taking
  std::map<std::string, std::string> owner_of_;    // an owner's process: the first to send it
  std::map<std::string, ns> last_own_call_, last_give_back_;
  std::vector<take_sent> own_takes_;
  void heard(const test::call_record& c, const std::string& sender);
  ns deposed_until_{0}, stale_until_{0}, stale_from_{0}, lag_{0};
};

template <class T, class Call>
void network::carry(process& from, const std::string& who, test::op o, const std::string& name, bool majority_read,
                    Call call, std::function<void(mongolock::detail::outcome<T>)> r) {
  if (closed_) return;
  // Posted first, so that the timers below are armed on the server's clock, not the caller's.
  server_.mail = true;
  boost::asio::post(server_.io, [this, &from, who, o, name, majority_read, call = std::move(call), r = std::move(r)]() mutable {
    after(latency(), [this, &from, who, o, name, majority_read, call = std::move(call), r = std::move(r)]() mutable {
      draw_fault(who, o, name, majority_read);
      if (trace_.detailed()) trace_.detail(who, name, "  " + std::string(op_name(o)) + " arrives");
      sending_ = &who;  // for the store's record of the call, which it makes as the call begins
      call([this, &from, who, o, name, r = std::move(r)](mongolock::detail::outcome<T> v) mutable {
        if (trace_.detailed())
          trace_.detail(who, name, "  " + std::string(op_name(o)) + " answered: " + (v.ec ? v.ec.message() : "ok") +
                                       (v.ambiguous ? " (ambiguous)" : ""));
        after(latency(), [&from, r = std::move(r), v = std::move(v)]() mutable {
          if (from.crashed) return;
          boost::asio::post(from.io, [r = std::move(r), v = std::move(v)]() mutable { r(std::move(v)); });
          from.mail = true;
        });
      });
      sending_ = nullptr;
    });
  });
}

}  // namespace sim
