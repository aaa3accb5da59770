#include "workload.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "model/clocks.hpp"

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
    : p_(p), who_(std::move(who)), provider_(std::move(prov)), rng_(r), oracle_(o), trace_(t), o_(std::move(wo)) {}

void workload::start() {
  for (int i = 0; i < o_.users; ++i) {
    ++running_;
    asio::co_spawn(p_.io, user(rng_.fork()), asio::detached);
  }
}

asio::awaitable<void> workload::user(rng r) {
  while (!stopping_) {
    co_await sleep_for(r.between(ns{0}, o_.think_max));
    if (stopping_) break;
    ++operations_;
    const std::string& name = o_.names[r.below(o_.names.size())];
    auto lock = provider_.create_lock(name);
    const auto wait = ms(r.between(ns{0}, o_.wait_max));
    const auto began = ml::detail::steady_clock::now();
    const ns paused_before = p_.paused_total;
    error_code ec;
    ml::lease l;
    std::string how;
    switch (r.below(4)) {
      case 0: {
        how = "acquire_for " + std::to_string(wait.count()) + " ms";
        std::tie(ec, l) = co_await lock.async_acquire_for(wait, tuple_await);
        // A pause of the process holds its timers back too (by its clock, which may run 10 % fast).
        const ns frozen = (p_.paused_total - paused_before) * 11 / 10;
        // A timeout of 0 is one look, bounded by the driver's timeouts as a try is (acquire_surface.hpp).
        if (wait.count() > 0 && ml::detail::steady_clock::now() - began > wait + o_.timeout_slack + frozen)
          oracle_.fail(name, who_ + " " + how + " completed after " +
                                 seconds(ml::detail::steady_clock::now() - began) + " (" + ec.message() + ")");
        break;
      }
      case 1:
        how = "try";
        std::tie(ec, l) = co_await lock.async_try_acquire(tuple_await);
        break;
      case 2: {
        how = "acquire cancelled after " + std::to_string(wait.count()) + " ms";
        asio::cancellation_signal cancel;
        ml::detail::steady_timer at(co_await asio::this_coro::executor, wait);
        at.async_wait([&cancel](error_code e) {
          if (!e) cancel.emit(asio::cancellation_type::terminal);
        });
        std::tie(ec, l) = co_await lock.async_acquire(asio::bind_cancellation_slot(cancel.slot(), tuple_await));
        at.cancel();
        break;
      }
      default:
        how = "acquire";
        std::tie(ec, l) = co_await lock.async_acquire(tuple_await);
        break;
    }
    trace_.note(who_, name, how + ": " + (ec ? ec.message() : "granted"));
    if (!ec) co_await hold(r, std::move(l));
  }
  --running_;
}

asio::awaitable<void> workload::hold(rng& r, ml::lease l) {
  oracle_.granted(p_, who_, l);
  const ns until = ml::detail::steady_clock::now().time_since_epoch() + r.between(ns{0}, o_.hold_max);
  while (ml::detail::steady_clock::now().time_since_epoch() < until) {
    co_await sleep_for(r.between(ns{0}, o_.hold_max / 4));
    if (!oracle::in_force(p_, l)) {
      trace_.note(who_, l.name(), "lease lost: " + (l.status() ? l.status().message() : "past its local deadline"));
      break;
    }
    oracle_.step(p_, who_, l);
  }
  oracle_.dropped(l);
  if (r.chance(0.2)) {
    trace_.note(who_, l.name(), "drops the lease");
    l = ml::lease{};  // released in the background
    co_return;
  }
  auto [ec] = co_await l.async_release(tuple_await);
  trace_.note(who_, l.name(), "release: " + (ec ? ec.message() : std::string("freed")));
}

}  // namespace sim
