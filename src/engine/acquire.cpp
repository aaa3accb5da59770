// The acquire operation: its checks, its adapter for the engine's driver (fsm_driver.hpp, which
// performs what acquire_fsm decides and feeds the results back with the time they arrived), and
// how it ends. Every decision lives in sansio/acquire_fsm.cpp.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <cstdlib>
#include <optional>

#include "engine/access.hpp"
#include "engine/acquire.hpp"
#include "engine/fsm_driver.hpp"
#include "sansio/acquire_fsm.hpp"
#include "sansio/backoff.hpp"
#include "model/jitter_rng.hpp"
#include "model/clocks.hpp"
#include "model/document_name.hpp"
#include "engine/lease_state.hpp"
#include "engine/timeout_check.hpp"
#include "mongolock/lock.hpp"

namespace mongolock::detail {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using steady = detail::steady_clock;
using result = std::tuple<error_code, lease>;
using kind = acquire_action::kind;

// `d`: the caller's diagnostics, if it passed one; it gets `why` (written here, on the acquire's
// strand, before the handler is dispatched).
result fail(provider_impl& p, diagnostics* d, error_code ec, const std::string& name, const std::string& why) {
  if (d) d->reason = why;
  if (ec != asio::error::operation_aborted && ec != errc::busy && ec != errc::timeout)
    // Returned to the caller with its reason: the log only gets it at debug level.
    p.log(log_level::debug, [&] {
      return std::string("acquire '" + name + "': " + ec.message() + (why.empty() ? "" : ": " + why));
    });
  return {ec, lease{}};
}

// Registers a canceller with the provider for the life of one acquire.
class close_hook {
 public:
  close_hook(provider_impl& p, std::function<void()> cancel) : p_(p), id_(p.life.on_close(std::move(cancel))) {}
  ~close_hook() { p_.life.forget_on_close(id_); }
  close_hook(const close_hook&) = delete;
  close_hook& operator=(const close_hook&) = delete;

 private:
  provider_impl& p_;
  std::uint64_t id_;
};

// The acquires_in_progress gauge, for the life of one acquire.
class in_progress {
 public:
  explicit in_progress(std::atomic<std::uint64_t>& n) : n_(n) { n_.fetch_add(1, std::memory_order_relaxed); }
  ~in_progress() { n_.fetch_sub(1, std::memory_order_relaxed); }
  in_progress(const in_progress&) = delete;
  in_progress& operator=(const in_progress&) = delete;

 private:
  std::atomic<std::uint64_t>& n_;
};

// A place in the line taken for this acquire by its provider's hand-off: left again on every way
// out before the FSM takes it over (which then leaves it itself when it gives up).
class enrolled_guard {
 public:
  enrolled_guard(std::shared_ptr<provider_impl> p, std::string name, std::optional<line_enrollment> e)
      : p_(std::move(p)), name_(std::move(name)), e_(std::move(e)) {}
  ~enrolled_guard() {
    if (e_) leave_line_in_background(p_, name_, e_->owner);
  }
  enrolled_guard(const enrolled_guard&) = delete;
  enrolled_guard& operator=(const enrolled_guard&) = delete;
  std::optional<line_enrollment> take() { return std::exchange(e_, std::nullopt); }

 private:
  std::shared_ptr<provider_impl> p_;
  std::string name_;
  std::optional<line_enrollment> e_;
};

deadline_t earlier(deadline_t a, boot_clock::time_point b) {
  const auto steady_b = to_steady(b);
  return a ? std::min(*a, steady_b) : steady_b;
}

// The provider's first contact with the server. A waiting acquire with a deadline keeps trying
// through an outage until then, as its reads do (docs/design.md section 4), paced by `pace` on
// `timer`. At the deadline it is server_unavailable, not timeout: no server has answered this
// provider yet, and that is the truth to report. A try, and an acquire without a deadline, ask
// once: a wrong URI looks the same as an outage, and must not make an acquire wait forever.
asio::awaitable<void> prepare_once(std::shared_ptr<provider_impl> p, deadline_t deadline, bool rides_out,
                                   boot_timer& timer, backoff pace, error_code& ec, std::string& why) {
  std::optional<steady::time_point> since;  // the send of the first check that found no server
  std::string last;
  std::optional<jitter_rng> rng;  // seeded at the first outage: no draw for a provider that answers
  const auto past_deadline = [&] { return deadline && steady::now() >= *deadline; };
  while (!p->prepared) {
    const auto sent = steady::now();
    auto r = co_await p->ops.prepare(deadline);
    // Cancelled, or the provider closing, while the call or the wait before it went on: say so,
    // not what the call answered (a cancellation that came between the two is only recorded).
    const auto stop = (co_await asio::this_coro::cancellation_state).cancelled();
    if (r.ec && (stop != asio::cancellation_type::none || p->closing())) {
      ec = asio::error::operation_aborted;
      why = p->closing() ? "the provider is shutting down" : "cancelled";
      co_return;
    }
    const bool outage = r.ec == errc::server_unavailable && rides_out;
    if (outage) {
      if (!since) since = sent;
      last = r.message;
    }
    if (r.ec == errc::timeout || (outage && past_deadline())) {
      ec = make_error_code(errc::server_unavailable);
      why = "no server answered within the acquire timeout";
      if (since) why = no_server_reason(std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - *since), last);
      co_return;
    }
    if (outage) {
      if (!rng) rng.emplace(p->next_seed());
      auto at = steady::now() + pace.next(*rng);
      if (deadline) at = std::min(at, *deadline);
      timer.expires_at(boot_clock::now() + (at - steady::now()));
      auto [waited] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
      const auto stopped = (co_await asio::this_coro::cancellation_state).cancelled();
      if (waited || stopped != asio::cancellation_type::none || p->closing()) {  // or woken by async_shutdown's hook
        ec = asio::error::operation_aborted;
        why = p->closing() ? "the provider is shutting down" : "cancelled";
        co_return;
      }
      continue;  // at the deadline, the next check ends at once with errc::timeout
    }
    if (r.ec) {
      ec = r.ec;
      why = r.message;
      co_return;
    }
    if (!r.message.empty()) p->log(log_level::warning, [&] { return std::string(r.message); });
    p->prepared = true;
  }
}

// The take with this provider's holder metadata: added here, not kept in every waiter's FSM.
take_request with_holder(take_request t, const holder_meta& meta) {
  t.meta = meta;
  return t;
}

// Built outside the coroutine, so the parameters do not take room in every waiter's frame.
acquire_fsm new_fsm(provider_impl& p, const lock_options& o, std::string name, acquire_mode mode,
                    deadline_t deadline, std::optional<line_enrollment> enrolled) {
  acquire_params params;
  params.try_once = !waits(mode);
  params.read_first = mode == acquire_mode::wait_looked;
  params.confirm_silent = mode == acquire_mode::try_confirming;
  params.in_turn = mode == acquire_mode::try_in_turn || mode == acquire_mode::try_taking_turn;
  if (enrolled) {
    params.owner = std::move(enrolled->owner);
    params.enrolled = acquire_params::line_place{enrolled->ticket, enrolled->sent};
  } else {
    params.owner = new_owner_id();
  }
  params.refresh_every = o.effective_renew_every();
  // The engine's instants count suspended time (model/clocks.hpp); the call deadlines are steady.
  if (deadline) params.deadline = boot_clock::now() + (*deadline - steady::now());
  params.expiry = o.expiry;
  params.margin = o.effective_margin();
  params.backoff_min = o.backoff_min;
  params.backoff_max = o.backoff_max;
  params.seed = p.next_seed();
  // The wall clock, read once: a try's hint, and the reading tokens start from (docs/design.md
  // section 1).
  const auto wall = detail::wall_clock::now();
  params.wall_now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
  params.token_clock = token_clock(wall);
  return acquire_fsm(std::move(name), std::move(params));
}

// An acquire that joined the line and ends without having left it in its take: its entry goes
// (in the background; if that fails, the entry costs the others one expiry + margin when it
// reaches the head).
void leave_line(const std::shared_ptr<provider_impl>& p, const acquire_fsm& fsm, leaving why) {
  if (!fsm.joined() || fsm.left_line_with_take()) return;
  leave_line_in_background(p, fsm.name(), fsm.owner(), why);
}

// acquire_fsm as fsm_driver.hpp drives it: the store call each action asks for, with this
// provider's holder metadata and the bounds of a take, and the reply fed back with its times.
class acquire_run {
 public:
  using action = acquire_action;

  // `member`: this wait's place in its acquire's poll group (a semaphore's or writer's permit), or
  // null (a plain lock's acquire: today's path, fsm_driver.hpp takes none of the polled hooks).
  acquire_run(std::shared_ptr<provider_impl> p, acquire_fsm& fsm, deadline_t deadline, boot_timer& timer,
              poll_member* member = nullptr)
      : p_(std::move(p)), fsm_(fsm), deadline_(deadline), timer_(timer), member_(member) {}

  store_ops& ops() { return p_->ops; }
  boot_timer& timer() { return timer_; }
  // async_shutdown wakes a waiting acquire through the timer; one in a store call sees closing()
  // when the call returns.
  bool stopping(bool cancelled) const { return cancelled || p_->closing(); }
  static driver_step step(const action& a) {
    switch (a.what) {
      case kind::wait_until: return driver_step::wait;
      case kind::grant:
      case kind::fail: return driver_step::done;
      default: return driver_step::call;
    }
  }
  static boot_clock::time_point wait_until(const action& a) { return a.at; }
  action resume_timer(boot_clock::time_point now) { return fsm_.resume(acquire_input::timer(now)); }
  action resume_cancel() {
    if (member_) member_->drop_read();  // stopped between the group's wake and its read
    return fsm_.resume(acquire_input::cancel());
  }

  // ---- polled with the other waits of its group (poll_group.hpp) ----
  bool polled() const noexcept { return member_ != nullptr; }
  bool reads_polled() const noexcept { return member_ && member_->in_gather(); }
  // Woken by the group (perhaps before `at`: acquire_fsm::on_timer only reads, or fails past the
  // deadline), by its own guard timer, or cancelled.
  asio::awaitable<action> wait_polled(boot_clock::time_point at) {
    auto waited = member_->wait(at);
    const auto how = co_await std::move(waited);
    if (how == poll_member::woke::cancelled) co_return resume_cancel();
    auto next = resume_timer(boot_clock::now());
    // Woken by the group but not reading (it failed): the gather does not wait for it.
    if (how == poll_member::woke::by_group && next.what != kind::read) member_->drop_read();
    co_return next;
  }
  asio::awaitable<polled_doc> read_polled(const fsm_call& c) {
    auto op = member_->read(c.name, c.deadline);
    auto got = co_await std::move(op);
    co_return got;
  }

  fsm_call call(const action& a) const {
    fsm_call c;
    c.sent = boot_clock::now();
    c.name = &fsm_.name();
    c.owner = &fsm_.owner();
    c.deadline = deadline_;
    switch (a.what) {
      case kind::read:
      case kind::recheck: c.what = fsm_call::op::read; break;  // fsm_.read_mode_now(): majority
      case kind::take: take(c, a); break;
      case kind::give_back:
        c.what = fsm_call::op::release;
        c.number = a.token;
        break;
      case kind::join:
        c.what = fsm_call::op::join_line;
        c.number = fsm_.join_ticket();
        break;
      case kind::refresh:
        c.what = fsm_call::op::refresh_line;
        c.number = fsm_.line_ticket();
        break;
      default: std::abort();  // step() makes calls of these kinds only
    }
    return c;
  }

  // `r` is moved into the machine's input: a reply is read once.
  action resume(const action& a, fsm_reply& r) {
    switch (a.what) {
      case kind::read:
      case kind::recheck: return resume_read(a, r);
      case kind::take: return fsm_.resume(acquire_input::take(std::move(r.wrote), r.sent, r.received));
      case kind::give_back: return fsm_.resume(acquire_input::given_back(std::move(r.wrote), r.received));
      case kind::join: return fsm_.resume(acquire_input::joined(std::move(r.wrote), r.sent, r.received));
      case kind::refresh: return fsm_.resume(acquire_input::refreshed(std::move(r.wrote), r.sent, r.received));
      default: std::abort();  // the reply of a call: one of the kinds above
    }
  }

 private:
  static_assert(acquire_fsm::read_mode_now() == read_mode::majority, "fsm_call reads are majority reads");

  void take(fsm_call& c, const action& a) const {
    c.what = fsm_call::op::take;
    c.request = with_holder(fsm_.request(), p_->meta);
    c.request.send_by = fsm_.take_bound(c.sent);
    // A reply after take_bound is useless (a late grant): stop waiting for it then.
    c.deadline = earlier(deadline_, fsm_.take_bound(c.sent));
    // If this call is abandoned (cancelled, timed out) and the server applied the take anyway,
    // give it back at once instead of leaving it to expire. The call keeps this (and its work
    // ticket) while the reply is due.
    c.on_abandoned = [p = p_, name = fsm_.name(), owner = fsm_.owner(), token = a.token,
                      working = p_->begin_work()](outcome<bool> late) {
      if (late.value || late.ambiguous) p->release_in_background(name, owner, token, {}, !late.value);
    };
  }

  action resume_read(const action& a, fsm_reply& r) {
    const auto out_of_bounds_before = fsm_.out_of_bounds_observations();
    const auto claimed = r.doc.value.held.expiry;  // for the warning below: r.doc is moved
    auto next = fsm_.resume(a.what == kind::read ? acquire_input::read(std::move(r.doc), r.received)
                                                 : acquire_input::recheck(std::move(r.doc), r.received));
    if (fsm_.out_of_bounds_observations() != out_of_bounds_before) {
      p_->log(log_level::warning, [&] {
        return "lock '" + fsm_.name() + "': its document claims expiry_ms " +
               std::to_string(claimed.count()) + ", outside what a mongolock holder writes (" +
               std::to_string(limits::min_expiry.count()) + ".." + std::to_string(limits::max_expiry.count()) +
               "); waiting as if it said " +
               std::to_string(expiry_observer::bounded(claimed).count()) +
               " (was the document written by something else?)";
      });
    }
    return next;
  }

  std::shared_ptr<provider_impl> p_;
  acquire_fsm& fsm_;
  deadline_t deadline_;
  boot_timer& timer_;
  poll_member* member_;
};

// The end of an acquire, outside the coroutine so that its locals take no room in the frame.
result grant(const std::shared_ptr<provider_impl>& p, diagnostics* d, const lock_options& o, const strand_type& strand,
             const acquire_fsm& fsm, const acquire_action& a, steady::time_point started, name_turn& turn) {
  auto st = make_held_lease(p, strand, fsm.name(), fsm.owner(), a.token, a.at, o, started, turn,
                            {fsm.others_in_line(), fsm.line_after_grant(), fsm.tickets_after_grant()});
  if (!st) {  // shutdown began while the take was in flight: it ends without a lease, as a give-up
    p->release_in_background(fsm.name(), fsm.owner(), a.token);
    leave_line(p, fsm, leaving::gave_up);  // the take may have left the entry (design.md section 7, point 8)
    return fail(*p, d, asio::error::operation_aborted, fsm.name(), "the provider is shutting down");
  }
  st->start();  // on its strand: this acquire's
  leave_line(p, fsm, leaving::granted);
  p->count.failed_attempts.fetch_add(fsm.lost_races(), std::memory_order_relaxed);
  p->count.busy_observations.fetch_add(fsm.busy_observations(), std::memory_order_relaxed);
  if (d) d->reason.clear();
  return {error_code{}, access::make_lease(std::move(st))};
}

// A provider that has never reached a server fails an acquire without a deadline at its first
// contact (a wrong URI must not wait forever: docs/design.md section 4). The acquires without a
// deadline parked behind it would each fail the same way after a server selection of their own,
// one after another: they fail with it now. Those with a deadline keep waiting: they ride the
// outage out in turn, each ending at its own deadline at the latest (section 7). A parked acquire
// has no place in the line (a hand-off enrols only the acquire it takes out of the queue), so
// there is nothing to leave.
void fail_unbounded_parked(const std::shared_ptr<provider_impl>& p, const std::string& name, const std::string& why) {
  for (auto& w : p->turns.drain_unbounded(name)) {
    p->count.acquiring.fetch_sub(1, std::memory_order_relaxed);  // no longer parked
    finish_parked(w, make_error_code(errc::server_unavailable),
                  "the server could not be reached by an earlier acquire of this lock in this provider: " + why, p->ex);
  }
}

result give_up(provider_impl& p, diagnostics* d, const acquire_fsm& fsm, const acquire_action& a) {
  for (auto token : fsm.unconfirmed()) p.release_in_background(fsm.name(), fsm.owner(), token, {}, true);
  // Once each (retried only on an error): if one has not landed yet, its late reply frees it.
  const auto listed = [](const std::vector<std::int64_t>& in, std::int64_t token) { return std::ranges::find(in, token) != in.end(); };
  for (auto token : fsm.abandoned())
    if (!listed(fsm.unconfirmed(), token)) p.release_in_background(fsm.name(), fsm.owner(), token);
  for (auto token : fsm.judged_missed())
    if (!listed(fsm.unconfirmed(), token) && !listed(fsm.abandoned(), token))
      p.release_in_background(fsm.name(), fsm.owner(), token);
  leave_line(p.shared_from_this(), fsm, leaving::gave_up);
  p.count.failed_attempts.fetch_add(fsm.lost_races(), std::memory_order_relaxed);
  p.count.busy_observations.fetch_add(fsm.busy_observations(), std::memory_order_relaxed);
  return fail(p, d, a.ec, fsm.name(), a.why);
}

// However an acquire ends, a set gathered with it (docs/design.md section 14) stops waiting for
// it: one that ends before any store call (refused, cancelled, out of time) is never heard from.
struct heard_at_end {
  std::shared_ptr<provider_impl> p;
  std::string name;
  ~heard_at_end() { p->grouped->heard_from(name); }
};

asio::awaitable<result> acquire_body(std::shared_ptr<provider_impl> p, strand_type strand, std::string name,
                                     std::shared_ptr<const lock_options> timing, bool plain, acquire_mode mode,
                                     std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                                     steady::time_point started, name_turn turn,
                                     std::optional<line_enrollment> enrolled, std::shared_ptr<poll_group> group) {
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  const heard_at_end ended{p, name};
  // `turn` passes on when this frame ends, unless the lease granted below took it over.
  std::string why;
  enrolled_guard place(p, name, std::move(enrolled));
  // A permit's document (NAME#k) is acquired only by its semaphore or rw_lock, never plainly.
  if (auto ec = plain ? validate_lock_name(name, &why) : validate_document_name(name, &why))
    co_return fail(*p, d, ec, "(invalid)", why);
  if (auto ec = check_acquire_timeout(timeout, &why)) co_return fail(*p, d, ec, name, why);
  // The ticket first: a shutdown that finds no work cannot miss this acquire's start.
  const auto working = p->begin_work();  // async_shutdown waits for this acquire to end
  const in_progress gauge(p->count.acquiring);
  if (p->closing()) co_return fail(*p, d, asio::error::operation_aborted, name, "the provider is shutting down");
  // Another acquire of the name in this provider has the turn: a try_taking_turn does not pass it.
  if (mode == acquire_mode::try_taking_turn && !turn.held())
    co_return fail(*p, d, make_error_code(errc::busy), name, {});
  const lock_options& opts = timing ? *timing : p->opts;
  const auto wait_for = timeout.value_or(opts.acquire_timeout);
  // From now: a parked acquire's timeout is what was left of it when its turn came.
  const deadline_t deadline = wait_for.count() > 0 ? deadline_t{steady::now() + wait_for} : std::nullopt;

  // async_shutdown wakes a waiting acquire through this timer (acquire_run::stopping, and the
  // first contact's waits). Both run on this strand, so no wake-up falls in between.
  auto timer = std::make_shared<boot_timer>(strand);
  const close_hook hook(*p, [strand, weak = std::weak_ptr(timer)] {
    asio::post(strand, [weak] {
      if (auto t = weak.lock()) t->cancel();
    });
  });

  error_code prep_ec;
  co_await prepare_once(p, deadline, waits(mode) && deadline.has_value(), *timer, backoff(opts.backoff_min, opts.backoff_max),
                        prep_ec, why);
  if (prep_ec) {
    if (turn.held() && prep_ec == errc::server_unavailable && !deadline) fail_unbounded_parked(p, name, why);
    co_return fail(*p, d, prep_ec, name, why);
  }

  // The name and the owner id live in the FSM only (one copy per waiter).
  acquire_fsm fsm = new_fsm(*p, opts, std::move(name), mode, deadline, place.take());

  // An acquire waits and is cancelled: if a hook of the adapter drifted from the driver's concept,
  // drive() would skip the stop check before each step without a compile error.
  static_assert(driver_detail::waits<acquire_run>, "acquire_run must offer the driver's waiting hooks");
  // Likewise for the polled hooks: a drifted one would silently stop the waits polling together.
  static_assert(driver_detail::polls<acquire_run>, "acquire_run must offer the driver's polled hooks");
  // A wait of a group (a semaphore's or writer's permit) polls with the others: one find for all.
  std::unique_ptr<poll_member> member;
  if (group && waits(mode)) member = std::make_unique<poll_member>(std::move(group), strand, timer);
  acquire_run run(p, fsm, deadline, *timer, member.get());
  auto first = fsm.resume(acquire_input::start(boot_clock::now()));
  auto driven = drive(run, std::move(first));
  const auto a = co_await std::move(driven);
  if (a.what == kind::grant) co_return grant(p, d, opts, strand, fsm, a, started, turn);
  co_return give_up(*p, d, fsm, a);
}

}  // namespace

void start_body(std::shared_ptr<provider_impl> p, std::string name, std::shared_ptr<const lock_options> timing,
                bool plain, acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                steady::time_point since, name_turn turn,
                asio::any_completion_handler<void(error_code, lease)> h,
                std::optional<line_enrollment> enrolled, std::shared_ptr<poll_group> group) {
  auto strand = asio::make_strand(p->ex);
  spawn_op<error_code, lease>(strand,
                              acquire_body(std::move(p), strand, std::move(name), std::move(timing), plain, mode, timeout, d,
                                           since, std::move(turn), std::move(enrolled), std::move(group)),
                              std::move(h));
}

void start_acquire(std::shared_ptr<provider_impl> p, std::string name, std::shared_ptr<const lock_options> timing,
                   bool plain, acquire_mode mode, std::optional<std::chrono::milliseconds> timeout, diagnostics* d,
                   asio::any_completion_handler<void(error_code, lease)> h, std::shared_ptr<poll_group> group) {
  const auto since = steady::now();
  // A try looks once and never parks; a timeout acquire_body will refuse is refused at once.
  const bool bad_timeout = static_cast<bool>(check_acquire_timeout(timeout));
  const bool closing = p->closing();
  if (!waits(mode) || bad_timeout || closing) {
    name_turn turn;  // only a try_taking_turn's, and only if the turn is free
    if (mode == acquire_mode::try_taking_turn && !bad_timeout && !closing) {
      auto key = name;  // copied before the turn is taken: nothing may throw between the two
      if (p->turns.take_if_free(key)) turn = name_turn(p, std::move(key));
    }
    return start_body(std::move(p), std::move(name), std::move(timing), plain, mode, timeout, d, since,
                      std::move(turn), std::move(h));
  }
  auto w = std::make_shared<parked_acquire>(std::move(h));
  w->name = std::move(name);
  w->timing = std::move(timing);
  w->plain = plain;
  w->diag = d;
  w->since = since;
  w->group = group;
  const auto wait_for = timeout.value_or((w->timing ? *w->timing : p->opts).acquire_timeout);
  if (wait_for.count() > 0) w->deadline = since + wait_for;
  // Parked behind another acquire of the name in this provider: it joins `group` when its turn
  // comes (start_turn); the group lives as long as one of its waits holds it.
  if (!p->turns.enter(w->name, w, [&] { park(p, w); })) return;
  // The turn is ours: run now, with nothing parked.
  name_turn turn(p, w->name);
  start_body(std::move(p), std::move(w->name), std::move(w->timing), plain, mode, timeout, d, since, std::move(turn),
             std::move(w->handler), std::nullopt, std::move(group));
}

void park(const std::shared_ptr<provider_impl>& p, const std::shared_ptr<parked_acquire>& w) {
  p->count.acquiring.fetch_add(1, std::memory_order_relaxed);
  // No store call until its turn: a set gathered with it must not wait for it (section 14).
  p->grouped->heard_from(w->name);
  std::weak_ptr<provider_impl> weak_p = p;
  std::weak_ptr<parked_acquire> weak_w = w;
  // Leaves the queue and completes with `ec`, unless its turn came first.
  auto leave = [weak_p, weak_w](error_code ec, const char* why) {
    auto p = weak_p.lock();
    auto w = weak_w.lock();
    if (!p || !w) return false;
    if (!p->turns.remove(w)) return false;
    p->count.acquiring.fetch_sub(1, std::memory_order_relaxed);
    finish_parked(w, ec, why, p->ex);
    return true;
  };
  w->slot = asio::get_associated_cancellation_slot(w->handler);
  if (w->slot.is_connected()) {
    w->slot.assign([leave, weak_w](asio::cancellation_type) {
      if (leave(asio::error::operation_aborted, "cancelled while waiting for another acquire of this lock in this provider")) return;
      if (auto w = weak_w.lock()) w->cancelled = true;  // its turn came: the start sees this
    });
  }
  if (w->deadline) {
    w->timer = std::make_unique<detail::steady_timer>(p->ex, *w->deadline);
    w->timer->async_wait([leave](error_code ec) {
      if (!ec) leave(make_error_code(errc::timeout), "timed out waiting for another acquire of this lock in this provider");
    });
  }
}

namespace {
// Runs `f(p, w, turn)` on the parked acquire's executor, `turn` being the name's turn that came to
// `w`: never inline (this may run inside a lease's end() or a release), so posted to the
// provider's executor, then on to the handler's own.
template <class F>
void on_parked_executor(const std::shared_ptr<provider_impl>& p, std::shared_ptr<parked_acquire> w, F f) {
  asio::post(p->ex, [p, w = std::move(w), f = std::move(f), working = p->begin_work()]() mutable {
    auto ex = asio::get_associated_executor(w->handler, p->ex);
    asio::dispatch(ex, [p = std::move(p), w = std::move(w), f = std::move(f), working = std::move(working)]() mutable {
      p->count.acquiring.fetch_sub(1, std::memory_order_relaxed);  // no longer parked
      if (w->timer) w->timer->cancel();
      f(p, w, name_turn(p, w->name));
    });
  });
}

// On the parked acquire's executor, once its turn came. On every way out but the start, the turn
// passes on (after the acquire has completed).
void start_turn(const std::shared_ptr<provider_impl>& p, const std::shared_ptr<parked_acquire>& w, name_turn turn) {
  const auto now = steady::now();
  // Put in line by a hand-off, and ending before it starts: the entry goes.
  auto enrolled = std::exchange(w->enrolled, std::nullopt);
  if (enrolled && (w->cancelled || p->closing() || (w->deadline && now >= *w->deadline)))
    leave_line_in_background(p, w->name, enrolled->owner);
  if (w->cancelled || p->closing())
    return finish_parked(w, asio::error::operation_aborted, w->cancelled ? "cancelled" : "the provider is shutting down", p->ex);
  if (w->deadline && now >= *w->deadline)
    return finish_parked(w, make_error_code(errc::timeout), "timed out waiting for another acquire of this lock in this provider", p->ex);
  std::optional<std::chrono::milliseconds> left;
  if (w->deadline) left = std::max(std::chrono::milliseconds{1}, std::chrono::ceil<std::chrono::milliseconds>(*w->deadline - now));
  // The slot now belongs to the acquire (spawn_op binds it), so the caller's cancellation reaches it.
  start_body(p, w->name, std::move(w->timing), w->plain, acquire_mode::wait, left, w->diag, w->since, std::move(turn),
             std::move(w->handler), std::move(enrolled), std::move(w->group));
}

// Frees whatever document of `name` names `owner`, the owner id of an acquire that ended without
// a lease: a releaser may have handed it the lock (docs/design.md section 7, point 8). Those that
// come in one turn of the executor (the leaves of one grouped command are answered together,
// section 14) go as one command (in parts past the server's size limit: splitting_store.hpp, which
// keeps each name with its owner id). Its filter pairs every name with every owner id, and that
// frees nothing it should not: a document that names any of these owner ids holds a lock that
// nobody will renew or release.
void free_abandoned_owner(const std::shared_ptr<provider_impl>& p, const std::string& name, const std::string& owner) {
  bool first = false;
  {
    std::lock_guard lock(p->abandoned.mu);
    first = p->abandoned.owners.empty();
    p->abandoned.names.push_back(name);
    p->abandoned.owners.push_back(owner);
  }
  if (!first) return;  // the command already posted takes this one too
  asio::post(p->ex, [p, working = p->begin_work()] {
    std::vector<std::string> names, owners;
    {
      std::lock_guard lock(p->abandoned.mu);
      names.swap(p->abandoned.names);
      owners.swap(p->abandoned.owners);
    }
    p->ops.release_owners(names, owners, [working](outcome<std::int64_t>) {});
  });
}
}  // namespace

void leave_line_in_background(const std::shared_ptr<provider_impl>& p, const std::string& name,
                              const std::string& owner, leaving why) {
  // Answered on the provider's executor; shutdown waits for it (the ticket). Not in line (or
  // unknown) after giving up: a releaser may have handed the lock to this owner id, which nobody
  // else uses and no lease holds.
  p->ops.leave_line(name, owner, [p, name, owner, why, working = p->begin_work()](outcome<bool> r) {
    if ((!r.ec && r.value) || why == leaving::granted) return;
    free_abandoned_owner(p, name, owner);
  });
}

name_turn::name_turn(std::shared_ptr<provider_impl> p, std::string name) noexcept
    : p_(std::move(p)), name_(std::move(name)), held_(true) {}

name_turn::name_turn(name_turn&& other) noexcept
    : p_(std::move(other.p_)), name_(std::move(other.name_)), held_(other.held_.exchange(false)) {}

name_turn& name_turn::operator=(name_turn&& other) noexcept {
  if (this == &other) return *this;
  pass();
  p_ = std::move(other.p_);
  name_ = std::move(other.name_);
  held_ = other.held_.exchange(false);
  return *this;
}

void name_turn::pass() {
  if (auto next = hand_on()) resume_parked(p_, std::move(next));
}

std::shared_ptr<parked_acquire> name_turn::hand_on() {
  if (!held_.exchange(false, std::memory_order_acq_rel)) return nullptr;
  return p_->turns.pass(name_);
}

void resume_parked(const std::shared_ptr<provider_impl>& p, std::shared_ptr<parked_acquire> next) {
  on_parked_executor(p, std::move(next), start_turn);
}

std::shared_ptr<lease_state> make_held_lease(const std::shared_ptr<provider_impl>& p, strand_type strand,
                                             std::string name, std::string owner, std::int64_t token,
                                             boot_clock::time_point clock_start, const lock_options& o,
                                             steady::time_point since, name_turn& turn, line_seen_at_grant seen) {
  const lease_fsm renewals(clock_start, o.expiry, o.effective_margin(), o.effective_renew_every(), p->next_seed());
  auto st = std::make_shared<lease_state>(p, std::move(strand), std::move(name), owner, token, renewals);
  st->others_in_line = seen.others_in_line;
  st->line_seen = std::move(seen.line);
  st->tickets_seen = seen.tickets;
  // The turn first: once registered, the lease can be ended from another thread (a release of
  // all, on its strand), and its end must find the turn it has to pass on.
  st->turn = std::move(turn);
  if (!p->life.add_live(owner, st)) {
    turn = std::move(st->turn);  // nobody else has seen `st`
    return nullptr;
  }
  p->count.acquisitions.fetch_add(1, std::memory_order_relaxed);
  p->count_wait(steady::now() - since);
  return st;
}

void grant_handed_over(const std::shared_ptr<provider_impl>& p, std::shared_ptr<parked_acquire> next,
                       std::string owner, std::int64_t token, boot_clock::time_point sent,
                       boot_clock::time_point bound) {
  auto hand_over = [owner = std::move(owner), token, sent, bound](const auto& p, const auto& w, name_turn turn) {
    // Given back: the acquire completes, then `turn` passes on as this returns.
    auto give_back = [&](error_code ec, const char* why) {
      p->release_in_background(w->name, owner, token);
      finish_parked(w, ec, why, p->ex);
    };
    if (w->cancelled) return give_back(asio::error::operation_aborted, "cancelled");
    if (p->closing()) return give_back(asio::error::operation_aborted, "the provider is shutting down");
    if (w->deadline && steady::now() >= *w->deadline) return give_back(make_error_code(errc::timeout), "the acquire timeout passed during the hand-off");
    if (boot_clock::now() >= bound) {  // a late grant (a stall since the reply): given back, never handed out
      p->release_in_background(w->name, owner, token);
      return start_turn(p, w, std::move(turn));
    }
    const lock_options& o = w->timing ? *w->timing : p->opts;
    auto st = make_held_lease(p, asio::make_strand(p->ex), w->name, owner, token, sent, o, w->since, turn);
    if (!st) return give_back(asio::error::operation_aborted, "the provider is shutting down");
    asio::post(st->strand, [st] { st->start(); });  // on its strand, before any release of it
    if (w->slot.is_connected()) w->slot.clear();
    if (w->diag) w->diag->reason.clear();
    auto h = std::move(w->handler);
    std::move(h)(error_code{}, access::make_lease(std::move(st)));
  };
  on_parked_executor(p, std::move(next), std::move(hand_over));
}

}  // namespace mongolock::detail
