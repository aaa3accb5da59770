// rw_lock: readers hold one permit each (the semaphore's acquire); a writer takes "NAME#w", then
// every permit at once, and gives everything back on any failure.
#include "mongolock/rw_lock.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "primitives/permits.hpp"

namespace mongolock {

namespace asio = boost::asio;
using boost::system::error_code;
using namespace asio::experimental::awaitable_operators;

namespace detail {
struct rw_state {
  std::shared_ptr<semaphore_state> readers;  // the permits, declared as a rw_lock's
  lock writer;                               // "NAME#w": one writer at a time
  rw_options opts;
};
}  // namespace detail

namespace {

using write_result = std::tuple<error_code, multi_lease>;
using read_result = std::tuple<error_code, lease>;

// Every permit, waited for at once; `held` gets them in permit order if all were granted. Else
// the first error in order of completion (the others were cancelled by it), and `held` gets
// whatever was granted, for the caller to give back.
asio::awaitable<error_code> acquire_permits(detail::semaphore_state& s, std::optional<std::chrono::milliseconds> left,
                                            std::vector<lease>& held, std::string& why) {
  std::vector<diagnostics> diags;
  // The free permits' takes as one command (docs/design.md section 14), and the reads of those
  // found held, which follow their takes, as one find (section 10).
  const auto names = detail::names_of(s.slots);
  const auto gathered = s.engine.gather(names);
  const auto gathered_reads = s.engine.gather_reads(names);
  auto group = detail::wait_on_every_permit(s, left, diags);
  auto all = std::move(group).async_wait(asio::experimental::wait_for_one_error(), asio::use_awaitable);
  auto [order, codes, leases] = co_await std::move(all);
  for (std::size_t i = 0; i < leases.size(); ++i)
    if (!codes[i] && leases[i]) held.push_back(std::move(leases[i]));
  for (auto i : order) {
    if (!codes[i]) continue;
    why = detail::permit_reason(s.slots[i], diags[i]);
    co_return codes[i];
  }
  co_return error_code{};
}

// One try of each permit in order, each a look in `mode` (try_once, try_confirming) within what
// is left before `deadline`; stops at the first that fails.
asio::awaitable<error_code> try_permits(detail::semaphore_state& s, detail::acquire_mode mode,
                                        detail::steady_deadline deadline, std::vector<lease>& held, std::string& why) {
  diagnostics inner;
  for (auto& slot : s.slots) {
    const auto left = detail::left_until(deadline);
    if (left && left->count() <= 0) {
      why = detail::try_out_of_time(slot);
      co_return make_error_code(errc::timeout);
    }
    auto op = detail::acquire(slot, mode, left, &inner, asio::as_tuple(asio::use_awaitable));
    auto [ec, got] = co_await std::move(op);
    if (ec) {
      why = detail::member_reason("permit '" + slot.name() + "'", ec, inner);
      co_return ec;
    }
    held.push_back(std::move(got));
  }
  co_return error_code{};
}

// NAME#w, then every permit (a try, `mode` other than wait: one look at each, in that mode).
asio::awaitable<detail::set_take> take_writer_and_permits(detail::rw_state& st, detail::steady_deadline deadline,
                                                         detail::acquire_mode mode, std::vector<lease>& held) {
  const bool try_once = mode != detail::acquire_mode::wait;
  detail::set_take r;
  auto timed_out = [&] {
    r.why = "the acquire timeout passed while taking the write lock of '" + st.readers->name + "'";
    return make_error_code(errc::timeout);
  };
  auto left = detail::left_until(deadline);
  if (left && left->count() <= 0) {
    r.ec = timed_out();
    if (try_once) r.why = detail::try_out_of_time(st.writer);
    co_return r;
  }
  diagnostics inner;
  auto take_writer = detail::acquire(st.writer, mode, left, &inner, asio::as_tuple(asio::use_awaitable));
  auto [ec, w] = co_await std::move(take_writer);
  if (ec) {
    r.why = detail::member_reason("'" + st.writer.name() + "'", ec, inner);
    r.ec = ec;
    co_return r;
  }
  held.push_back(std::move(w));
  left = detail::left_until(deadline);
  if (detail::cancelled(co_await asio::this_coro::cancellation_state)) {  // emitted between the two steps
    r.ec = asio::error::operation_aborted;
    r.why = "cancelled";
  } else if (left && left->count() <= 0) {
    r.ec = timed_out();
    if (try_once) r.why = detail::try_out_of_time(st.readers->slots.front());
  } else if (try_once) {
    auto tries = try_permits(*st.readers, mode, deadline, held, r.why);
    r.ec = co_await std::move(tries);
  } else {
    // Raced against the loss of NAME#w: a writer without it must not sit on permits (the
    // order that rules out a deadlock between writers needs NAME#w held while waiting).
    auto waits = acquire_permits(*st.readers, left, held, r.why);
    auto writer_lost = held.front().async_wait_lost(asio::as_tuple(asio::use_awaitable));
    auto either = std::move(waits) || std::move(writer_lost);  // named: GCC 12 and temporaries
    auto raced = co_await std::move(either);
    if (raced.index() == 0) {
      r.ec = std::get<0>(raced);
    } else if (std::get<0>(std::get<1>(raced)) == asio::error::operation_aborted) {
      r.ec = asio::error::operation_aborted;  // the caller's cancellation reached this wait first
      r.why = "cancelled";
    }  // else NAME#w ended: the set is not whole, and is taken again
  }
  co_return r;
}

asio::awaitable<write_result> acquire_writer(std::shared_ptr<detail::rw_state> st, detail::acquire_mode mode,
                                             std::optional<std::chrono::milliseconds> timeout, diagnostics* d) {
  co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto deadline = detail::deadline_of(timeout);
  std::string why;
  auto declared = detail::ensure_declared(st->readers, why, deadline);
  if (auto ec = co_await std::move(declared)) {
    if (d) d->reason = why;
    co_return write_result{ec, multi_lease{}};
  }
  // Whole only with NAME#w and every permit, each still held: a wait that ended early (NAME#w
  // lost, or cancelled) leaves some out, and must never be handed out as the write lock.
  auto take = [&](std::vector<lease>& held) { return take_writer_and_permits(*st, deadline, mode, held); };
  co_return co_await detail::take_whole_set(take, st->readers->slots.size() + 1, deadline, d);
}

// {} if the options can be used, else invalid_options or invalid_name with why.
error_code check(const detail::rw_state& st, std::optional<std::chrono::milliseconds> timeout, std::string& why) {
  if (st.opts.max_readers < 1 || st.opts.max_readers > limits::max_permits) {
    why = "rw_options::max_readers must be 1.." + std::to_string(limits::max_permits) + ", not " +
          std::to_string(st.opts.max_readers);
    return make_error_code(errc::invalid_options);
  }
  if (auto ec = detail::check_permits(*st.readers, &why)) return ec;
  if (auto ec = detail::check_acquire_timeout(timeout, &why)) return ec;
  if (st.readers->engine.closing()) {
    why = "the provider is shutting down";
    return asio::error::operation_aborted;
  }
  return {};
}

}  // namespace

rw_lock::rw_lock(const lock& prototype, std::string name, rw_options o) {
  const semaphore readers(prototype, name, o.max_readers, "rw_lock");
  state_ = std::make_shared<detail::rw_state>(
      detail::rw_state{readers.state_, readers.state_->engine.make_lock(name + "#w", false), o});
}

const std::string& rw_lock::name() const noexcept { return state_->readers->name; }
const rw_options& rw_lock::options() const noexcept { return state_->opts; }

asio::any_io_executor rw_lock::executor_of(const shared& s) noexcept { return s->readers->engine.executor(); }

void rw_lock::start_read(shared s, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout,
                         diagnostics* d, read_handler h) {
  std::string why;
  const auto ec = check(*s, timeout, why);
  const auto e = s->readers->engine;
  auto body = [&] {
    return detail::acquire_permit(s->readers, mode, !s->opts.prefer_writers, e.timeout_or_default(timeout), d);
  };
  detail::start_checked(e, ec, why, d, body, std::move(h));
}

void rw_lock::start_write(shared s, detail::acquire_mode mode, std::optional<std::chrono::milliseconds> timeout,
                          diagnostics* d, write_handler h) {
  std::string why;
  const auto ec = check(*s, timeout, why);
  const auto e = s->readers->engine;
  auto body = [&] { return acquire_writer(std::move(s), mode, e.timeout_or_default(timeout), d); };
  detail::start_checked(e, ec, why, d, body, std::move(h));
}

}  // namespace mongolock
