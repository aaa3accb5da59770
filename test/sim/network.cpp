#include "network.hpp"

#include <boost/asio/post.hpp>

#include "model/clocks.hpp"

namespace sim {

namespace ml = mongolock;
using ml::detail::lock_doc;
using ml::detail::outcome;
using test::fault;
using test::op;
using std::chrono::milliseconds;

namespace {

milliseconds ms_of(ns d) { return std::chrono::ceil<milliseconds>(d); }

std::string_view fault_name(fault::kind k) {
  static constexpr std::string_view names[] = {"pass", "write_concern_error", "stream_error_before", "stream_error_after",
                                               "hang", "apply_late", "slow_request", "stale_read", "unavailable",
                                               "refused", "uncommitted", "driver_resend"};
  return names[static_cast<int>(k)];
}

bool is_write(op o) { return o != op::read && o != op::read_each && o != op::list && o != op::prepare; }

// One simulated process's store: each call goes over the network to the one server.
class link final : public ml::detail::lock_store {
 public:
  link(network& n, process& client, std::string who) : net_(n), client_(client), store_(n.store()), who_(std::move(who)) {}

  void prepare(reply<outcome<ml::detail::server_info>> r) override {
    net_.carry<ml::detail::server_info>(client_, who_, op::prepare, {}, false, [this](auto re) { store_.prepare(std::move(re)); }, std::move(r));
  }
  void read(const std::string& name, ml::detail::read_mode m, reply<outcome<lock_doc>> r) override {
    net_.carry<lock_doc>(client_, who_, op::read, name, m == ml::detail::read_mode::majority,
                         [this, name, m](auto re) { store_.read(name, m, std::move(re)); }, std::move(r));
  }
  void read_each(const std::vector<std::string>& names, ml::detail::read_mode m,
                 reply<outcome<std::vector<lock_doc>>> r) override {
    net_.carry<std::vector<lock_doc>>(client_, who_, op::read_each, names.empty() ? std::string() : names.front(), m == ml::detail::read_mode::majority,
                                      [this, names, m](auto re) { store_.read_each(names, m, std::move(re)); }, std::move(r));
  }
  void list(reply<outcome<std::vector<ml::detail::named_doc>>> r) override {
    net_.carry<std::vector<ml::detail::named_doc>>(client_, who_, op::list, {}, false, [this](auto re) { store_.list(std::move(re)); },
                                                    std::move(r));
  }
  void take(const ml::detail::take_request& t, reply<outcome<bool>> r) override {
    net_.carry<bool>(client_, who_, op::take, t.name, false, [this, t](auto re) { store_.take(t, std::move(re)); }, std::move(r));
  }
  void renew(const std::vector<ml::detail::held_lease>& held, milliseconds expiry,
             reply<outcome<std::vector<bool>>> r) override {
    net_.carry<std::vector<bool>>(client_, who_, op::renew, held.empty() ? std::string() : held.front().name, false,
                                  [this, held, expiry](auto re) { store_.renew(held, expiry, std::move(re)); }, std::move(r));
  }
  void release(const std::string& name, const std::string& owner, std::int64_t token, reply<outcome<bool>> r) override {
    net_.carry<bool>(client_, who_, op::release, name, false,
                     [this, name, owner, token](auto re) { store_.release(name, owner, token, std::move(re)); }, std::move(r));
  }
  void release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                      reply<outcome<std::int64_t>> r) override {
    net_.carry<std::int64_t>(client_, who_, op::release_owners, names.empty() ? std::string() : names.front(), false,
                             [this, names, owners](auto re) { store_.release_owners(names, owners, std::move(re)); },
                             std::move(r));
  }
  void write_grouped(const std::vector<ml::detail::grouped_write>& writes,
                     reply<outcome<std::vector<ml::detail::grouped_outcome>>> r) override {
    net_.carry<std::vector<ml::detail::grouped_outcome>>(
        client_, who_, op::write_grouped, writes.empty() ? std::string() : writes.front().name(), false, [this, writes](auto re) { store_.write_grouped(writes, std::move(re)); }, std::move(r));
  }
  void join_line(const std::string& name, const std::string& owner, std::int64_t ticket, reply<outcome<bool>> r) override {
    net_.carry<bool>(client_, who_, op::join_line, name, false,
                     [this, name, owner, ticket](auto re) { store_.join_line(name, owner, ticket, std::move(re)); }, std::move(r));
  }
  void leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) override {
    net_.carry<bool>(client_, who_, op::leave_line, name, false,
                     [this, name, owner](auto re) { store_.leave_line(name, owner, std::move(re)); }, std::move(r));
  }
  void refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket, reply<outcome<bool>> r) override {
    net_.carry<bool>(client_, who_, op::refresh_line, name, false,
                     [this, name, owner, ticket](auto re) { store_.refresh_line(name, owner, ticket, std::move(re)); },
                     std::move(r));
  }
  void proclaim(const std::string& name, const std::string& owner, std::int64_t token, const std::string& value,
                reply<outcome<bool>> r) override {
    net_.carry<bool>(client_, who_, op::proclaim, name, false,
                     [this, name, owner, token, value](auto re) { store_.proclaim(name, owner, token, value, std::move(re)); },
                     std::move(r));
  }
  void record_run(const std::string& name, const std::string& owner, std::int64_t token, reply<outcome<bool>> r) override {
    net_.carry<bool>(client_, who_, op::record_run, name, false,
                     [this, name, owner, token](auto re) { store_.record_run(name, owner, token, std::move(re)); },
                     std::move(r));
  }
  void declare(const std::string& name, const ml::detail::declaration& d,
               reply<outcome<ml::detail::declaration>> r) override {
    net_.carry<ml::detail::declaration>(client_, who_, op::declare, name, false,
                                        [this, name, d](auto re) { store_.declare(name, d, std::move(re)); }, std::move(r));
  }
  void force_release(const std::string& name, bool immediate, reply<outcome<std::string>> r) override {
    net_.carry<std::string>(client_, who_, op::force_release, name, false,
                            [this, name, immediate](auto re) { store_.force_release(name, immediate, std::move(re)); },
                            std::move(r));
  }
  bool accepting() const noexcept override { return store_.accepting(); }

 private:
  network& net_;
  process& client_;
  test::memory_store& store_;
  const std::string who_;
};

}  // namespace

std::string_view op_name(op o) {
  static constexpr std::string_view names[] = {"prepare", "read", "read_each", "list", "take", "renew", "release",
                                               "release_owners", "force_release", "join_line", "leave_line",
                                               "refresh_line", "proclaim", "declare", "record_run", "write_grouped"};
  return names[static_cast<int>(o)];
}

network::network(world& w, process& server, rng r, net_faults f, trace& t)
    : world_(w), server_(server), rng_(r), faults_(f), trace_(t) {
  const inside in(server_);
  store_ = std::make_shared<test::memory_store>(server_.io.get_executor());
  store_->keep_history();  // for the stale snapshots of a failover
  store_->on_call([this](const test::call_record& c) {
    if (!sending_) return;
    if (c.parts.empty())
      heard(c, *sending_);
    else
      for (const auto& part : c.parts) heard(part, *sending_);
    sending_ = nullptr;
  });
}

void network::heard(const test::call_record& c, const std::string& sender) {
  using test::op;
  if (c.owner.empty() || c.what == op::write_grouped) return;
  const ns now = world_.now();
  // A hand-off may put the releaser's next local waiter in line: a waiter of the sender's process.
  if (!c.enrolled.empty() && owner_of_.emplace(c.enrolled, sender).first->second == sender)
    last_own_call_[c.enrolled] = now;
  // A hand-off: a releaser's take that writes the head of the line in as holder (the head may be a
  // waiter of the releaser's own process, even one long gone). It gives the releaser's lock back.
  const auto releaser = owner_of_.find(c.from);
  if (c.what == op::take && c.from != c.owner && releaser != owner_of_.end() && releaser->second == sender) {
    last_give_back_[c.from] = now;
    return;
  }
  // An owner first reaches the server in its own process's call (a join or a take).
  if (owner_of_.emplace(c.owner, sender).first->second != sender) return;
  if (c.what == op::release || c.what == op::release_owners)
    last_give_back_[c.owner] = now;  // a give-back may be retried long after its acquire ended
  else
    last_own_call_[c.owner] = now;
  if (c.what == op::take) own_takes_.push_back({c.name, c.owner, c.token, now});
  if (trace_.detailed()) trace_.detail(sender, c.name, "    of owner " + c.owner.substr(0, 8));
}

void network::ttl_monitor(ns idle, std::function<void(const std::string&)> removed) {
  after(std::chrono::seconds{60}, [this, idle, removed = std::move(removed)]() mutable {
    if (closed_) return;
    for (const auto& name : store_->expire_idle(ms_of(idle), ml::detail::wall_ms())) {
      trace_.note("server", name, "removed by the TTL monitor");
      removed(name);
    }
    ttl_monitor(idle, std::move(removed));
  });
}

std::shared_ptr<ml::detail::lock_store> network::link_for(process& client, std::string who) {
  return std::make_shared<link>(*this, client, std::move(who));
}

void network::after(ns d, std::function<void()> f) {
  if (d <= ns{0}) {
    boost::asio::post(server_.io, std::move(f));
    return;
  }
  auto t = std::make_shared<ml::detail::steady_timer>(server_.io, d);
  t->async_wait([t, f = std::move(f)](boost::system::error_code) { f(); });
}

ns network::latency() {
  if (faults_.tail > 0 && rng_.chance(faults_.tail) && !calm_) return rng_.between(faults_.latency_typical, faults_.tail_max);
  return rng_.between(faults_.latency_min, faults_.latency_typical);
}

void network::failover(ns deposed, ns election, ns stale_for, ns lag) {
  const ns now = world_.now();
  trace_.note("server", "", "failover: writes lost for " + seconds(deposed) + ", election " + seconds(election) +
                                ", stale majority reads for " + seconds(stale_for) + " (lag " + seconds(lag) + ")");
  deposed_until_ = now + deposed;
  after(deposed, [this, election, stale_for, lag] {
    store_->rollback();
    store_->unreachable_for(ms_of(election), ms_of(faults_.selection));
    stale_from_ = world_.now() - lag;
    stale_until_ = world_.now() + election + stale_for;
    trace_.note("server", "", "rolled back; primary elected after " + seconds(election));
  });
}

void network::unreachable(ns window) {
  trace_.note("server", "", "unreachable for " + seconds(window));
  store_->unreachable_for(ms_of(window), ms_of(faults_.selection));
}

void network::draw_fault(const std::string& who, op o, const std::string& name, bool majority_read) {
  // No server to meet a fault: one queued now would wait for a later call of its kind.
  if (store_->unreachable_now()) return;
  const ns now = world_.now();
  const auto met = [&](const fault& f, std::string_view what) {
    store_->inject(o, f);
    trace_.note(who, name, std::string(op_name(o)) + " meets " + std::string(what));
  };
  if (is_write(o) && now < deposed_until_) return met(fault(fault::kind::uncommitted, ms_of(deposed_until_ - now)), "a deposed primary");
  if (majority_read && now < stale_until_ && rng_.chance(0.5)) {
    // The server's steady clock is true time plus its boot offset (its rate is exact).
    const auto snapshot = ml::detail::steady_clock::now() - (now - stale_from_);
    return met(fault::as_of(snapshot), "a stale majority snapshot");
  }
  if (calm_ || faults_.per_call <= 0 || !rng_.chance(faults_.per_call)) return;
  std::vector<fault> can;
  const auto hang = ms_of(rng_.between(ns{std::chrono::milliseconds{1}}, faults_.hang_max));
  if (faults_.hangs) can.emplace_back(fault::kind::hang, hang);
  if (faults_.unavailable) can.emplace_back(fault::kind::unavailable, ms_of(faults_.selection));
  if (faults_.refusals) can.emplace_back(fault::kind::refused);
  if (is_write(o) && o != op::release_owners) {
    if (faults_.lost_replies) {
      can.emplace_back(fault::kind::stream_error_after);
      can.emplace_back(fault::kind::stream_error_before);
    }
    if (faults_.write_concern_errors) can.emplace_back(fault::kind::write_concern_error, hang);
    if (faults_.late_applies) can.emplace_back(fault::kind::apply_late, hang);
    if (faults_.slow_requests) can.emplace_back(fault::kind::slow_request, hang);
    if (faults_.resends) {
      // Drawn one after the other: a function's arguments are evaluated in no set order (GCC from
      // the last, clang from the first), and a seed must replay under either (this is GCC's order).
      const auto late = rng_.chance(0.5) ? milliseconds{0} : hang;
      can.push_back(fault::resend(ms_of(rng_.between(ns{0}, ns{hang})), late));
    }
  }
  if (can.empty()) return;
  const fault& f = can[rng_.below(can.size())];
  met(f, std::string(fault_name(f.what)) + " " + std::to_string(f.delay.count()) + " ms");
}

}  // namespace sim
