// The waits of one acquire of several documents, polled together (poll_group.hpp; docs/design.md
// section 10, Waiting and Cost). The group's state is touched on its strand only; a member's on
// the member's strand only. They talk by posts, so no order of the executor's queue matters: a
// gather is sent when every member it woke has answered (asked, skipped, withdrawn or left).
#include "engine/poll_group.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <chrono>

#include "engine/provider_impl.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// A member's own timer is armed this long after its `at`: it wakes itself (and reads alone) only
// if the group's wake never came, which the group's own timer rules out; a guard, not a pace.
constexpr auto own_timer_slack = std::chrono::seconds{1};

polled_doc aborted() {
  polled_doc d;
  d.ec = asio::error::operation_aborted;
  d.message = "cancelled";
  return d;
}
}  // namespace

poll_group::poll_group(std::shared_ptr<provider_impl> p)
    : p_(std::move(p)), strand_(asio::make_strand(p_->ex)), timer_(strand_) {}

void poll_group::enlist(std::uint64_t id, std::uint64_t seq, boot_clock::time_point at, strand_type ex,
                        std::shared_ptr<poll_member_state> st) {
  asio::post(strand_, [self = shared_from_this(), id, seq, at, ex = std::move(ex), st = std::move(st)]() mutable {
    const auto it = self->members_.try_emplace(id, member{std::move(ex), std::move(st), seq, at}).first;
    it->second.seq = seq;
    it->second.at = at;
    self->rearm();
  });
}

void poll_group::withdraw(std::uint64_t id, std::uint64_t seq) {
  asio::post(strand_, [self = shared_from_this(), id, seq] {
    if (auto it = self->members_.find(id); it != self->members_.end() && it->second.seq == seq) it->second.at.reset();
    if (auto it = self->pending_.find(id); it != self->pending_.end() && it->second == seq) self->pending_.erase(it);
    self->rearm();
    self->maybe_send();
  });
}

void poll_group::skip(std::uint64_t id, std::uint64_t seq) {
  asio::post(strand_, [self = shared_from_this(), id, seq] {
    if (auto it = self->pending_.find(id); it != self->pending_.end() && it->second == seq) self->pending_.erase(it);
    self->maybe_send();
  });
}

void poll_group::ask(std::uint64_t id, std::uint64_t seq, std::string name, deadline_t deadline,
                     std::function<void(polled_doc)> reply) {
  asio::post(strand_, [self = shared_from_this(), id, seq, name = std::move(name), deadline,
                       reply = std::move(reply)]() mutable {
    const auto it = self->pending_.find(id);
    const bool awaited = it != self->pending_.end() && it->second == seq;
    if (awaited) self->pending_.erase(it);
    self->asked_.push_back(asked{id, std::move(name), deadline, std::move(reply)});
    // Not awaited by a gather (it cannot happen: a member asks only after the group's wake, and
    // nothing else takes it out of pending_ before): it goes with whatever is open, or alone.
    self->maybe_send();
  });
}

void poll_group::leave(std::uint64_t id) {
  asio::post(strand_, [self = shared_from_this(), id] {
    self->members_.erase(id);
    self->pending_.erase(id);
    // std::partition, not std::ranges::partition: clang 14 cannot compile libstdc++ 12's ranges.
    auto& all = self->asked_;
    const auto gone = std::partition(all.begin(), all.end(), [id](const asked& a) { return a.id != id; });
    for (auto a = gone; a != all.end(); ++a) a->reply(aborted());
    all.erase(gone, all.end());
    self->rearm();
    self->maybe_send();
  });
}

// One timer at the earliest registered `at`; none when nobody is registered (so a group whose
// members all left holds no timer and goes away).
void poll_group::rearm() {
  std::optional<boot_clock::time_point> earliest;
  for (const auto& [id, m] : members_)
    if (m.at && (!earliest || *m.at < *earliest)) earliest = m.at;
  if (earliest == armed_) return;
  ++generation_;
  armed_ = earliest;
  if (!earliest) {
    timer_.cancel();
    return;
  }
  timer_.expires_at(*earliest);  // cancels the wait for the previous `at`, now stale
  timer_.async_wait([self = shared_from_this(), g = generation_](error_code ec) {
    if (!ec) self->fire(g);
  });
}

// Every registered member is woken, not only those due: the earliest `at` paces them all
// (design.md section 10: an early read is one more observation, never a shorter window).
void poll_group::fire(std::uint64_t generation) {
  if (generation != generation_) return;
  armed_.reset();
  for (auto& [id, m] : members_) {
    if (!m.at) continue;
    m.at.reset();
    pending_[id] = m.seq;
    asio::post(m.ex, [st = m.st, seq = m.seq] {
      // Only the registration it was meant for, and only while the member still waits on it.
      if (!st->waiting || st->seq != seq || st->woken) return;
      st->woken = true;
      st->timer->cancel();
    });
  }
}

// Once no woken member is still to answer: one find of every name asked (a lone name: one read,
// as an ungrouped wait's). The reply's arrival is every member's receive time.
void poll_group::maybe_send() {
  if (!pending_.empty() || asked_.empty()) return;
  auto batch = std::make_shared<std::vector<asked>>(std::move(asked_));
  asked_.clear();
  // The latest deadline of the batch, none if any has none: each member's own deadline is kept
  // by its async_call, which stops waiting for this reply at it.
  deadline_t deadline = batch->front().deadline;
  for (const auto& a : *batch)
    deadline = (!deadline || !a.deadline) ? deadline_t{} : std::max(*deadline, *a.deadline);
  // No work ticket: each member waiting for this find holds its acquire's own, and a member
  // that stopped waiting (cancelled, shutdown) has abandoned its read, as an ungrouped wait
  // abandons its own read: shutdown does not wait for a reply nobody needs.
  if (batch->size() == 1) {
    p_->ops.read(batch->front().name, read_mode::majority, deadline,
                 asio::bind_executor(strand_, [batch](outcome<lock_doc> r) {
                   polled_doc d{r.ec, std::move(r.message), std::move(r.value), boot_clock::now()};
                   batch->front().reply(std::move(d));
                 }));
    return;
  }
  std::vector<std::string> names;
  names.reserve(batch->size());
  for (const auto& a : *batch) names.push_back(a.name);
  p_->ops.read_each(names, read_mode::majority, deadline,
                    asio::bind_executor(strand_, [batch](outcome<std::vector<lock_doc>> r) {
                      const auto received = boot_clock::now();
                      auto each = each_of_find(std::move(r), batch->size());
                      for (std::size_t i = 0; i < batch->size(); ++i) {
                        auto& one = each[i];
                        (*batch)[i].reply(polled_doc{one.ec, std::move(one.message), std::move(one.value), received});
                      }
                    }));
}

// ---- the member's end ----

poll_member::poll_member(std::shared_ptr<poll_group> g, strand_type ex, std::shared_ptr<boot_timer> timer)
    : g_(std::move(g)), ex_(std::move(ex)), st_(std::make_shared<poll_member_state>()), id_(g_->next_id()) {
  st_->timer = std::move(timer);
}

poll_member::~poll_member() { g_->leave(id_); }

asio::awaitable<poll_member::woke> poll_member::wait(boot_clock::time_point at) {
  const auto seq = ++st_->seq;
  st_->waiting = true;
  st_->woken = false;
  g_->enlist(id_, seq, at, ex_, st_);
  auto& timer = *st_->timer;
  timer.expires_at(at + own_timer_slack);
  auto waited = timer.async_wait(asio::as_tuple(asio::use_awaitable));
  auto [ec] = co_await std::move(waited);
  st_->waiting = false;
  // Woken by the group even if the timer also ended otherwise: the group counts it as woken.
  if (std::exchange(st_->woken, false)) {
    gather_seq_ = seq;
    co_return woke::by_group;
  }
  g_->withdraw(id_, seq);
  co_return ec ? woke::cancelled : woke::by_itself;
}

void poll_member::drop_read() {
  if (auto seq = std::exchange(gather_seq_, std::nullopt)) g_->skip(id_, *seq);
}

asio::awaitable<polled_doc> poll_member::read(const std::string* name, deadline_t deadline) {
  const auto seq = *std::exchange(gather_seq_, std::nullopt);
  store_call<polled_doc> start = [g = g_, id = id_, seq, name = *name, deadline](auto reply) {
    g->ask(id, seq, name, deadline, std::move(reply));
  };
  auto op = async_call<polled_doc>(ex_, std::move(start), nullptr, deadline, asio::use_awaitable);
  auto got = co_await std::move(op);
  co_return got;
}

}  // namespace mongolock::detail
