#include "engine/group_commit.hpp"
#include "model/clocks.hpp"

#include <unordered_set>

#include "mongolock/error.hpp"

namespace mongolock::detail {

namespace {
// A grouped statement the read after a short count could not judge: as a reply lost after sending
// (section 4), so a take goes to its own majority re-check and a release retries in the background.
outcome<bool> unjudged() {
  return failure<bool>(make_error_code(errc::server_unavailable),
                       "the grouped command matched fewer statements than it sent, and whether this one applied "
                       "is not known",
                       true);
}

// Never sent: its bound passed while it waited for a command. Not ambiguous, nothing to give back.
outcome<bool> unsent() {
  return failure<bool>(make_error_code(errc::timeout),
                       "the take's bound passed while it waited for a command; it was not sent");
}

// A join whose leave came while it waited for a command: its caller has gone, and unsent it can
// leave no entry behind.
outcome<bool> left_unsent() {
  return failure<bool>(make_error_code(boost::asio::error::operation_aborted),
                       "the acquire left the line before its join was sent; it was not sent");
}

// Past its bound (a take only): sending it could no longer grant anything.
bool past_bound(const grouped_write& w, boot_clock::time_point now) {
  return w.what == grouped_write::kind::take && w.take.send_by && *w.take.send_by <= now;
}
}  // namespace

grouping_store::grouping_store(std::shared_ptr<lock_store> inner)
    : forwarding_store(std::move(inner)), reads_(std::make_shared<read_gatherer>(inner_)) {}

void grouping_store::take(const take_request& t, reply<outcome<bool>> r) {
  if (t.hand_over) {
    heard_from(t.name);
    return inner_->take(t, std::move(r));
  }
  pending p{{grouped_write::kind::take, t, {}, 0, {}}, std::move(r)};
  submit(takes_, std::move(p));
}

void grouping_store::release(const std::string& name, const std::string& owner, std::int64_t token,
                             reply<outcome<bool>> r) {
  pending p{{grouped_write::kind::release, {}, held_lease{name, owner, token}, 0, {}}, std::move(r)};
  submit(releases_, std::move(p));
}

void grouping_store::join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                               reply<outcome<bool>> r) {
  heard_from(name);
  pending p{{grouped_write::kind::join, {}, {}, 0, line_write{name, owner, ticket}}, std::move(r)};
  submit(joins_, std::move(p));
}

void grouping_store::leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) {
  heard_from(name);
  pending p{{grouped_write::kind::leave, {}, {}, 0, line_write{name, owner, 0}}, std::move(r)};
  std::vector<pending> unsent;
  bool after_join = false;
  {
    std::lock_guard lock(mu_);
    const auto key = entry_key(p.write.line);
    auto& queued = joins_.waiting;
    for (auto it = queued.begin(); it != queued.end();) {
      if (entry_key(it->write.line) != key) {
        ++it;
        continue;
      }
      unsent.push_back(std::move(*it));
      it = queued.erase(it);
    }
    after_join = joins_out_.count(key) > 0;
    if (after_join) leaves_after_join_[key].push_back(std::move(p));
  }
  for (auto& j : unsent) j.done(left_unsent());
  // The leave still goes: an earlier join of the same acquire may have written the entry.
  if (!after_join) submit(leaves_, std::move(p));
}

void grouping_store::joins_answered(const std::vector<pending>& ops) {
  std::vector<pending> go;
  {
    std::lock_guard lock(mu_);
    for (const auto& op : ops) {
      const auto key = entry_key(op.write.line);
      if (auto it = joins_out_.find(key); it != joins_out_.end()) joins_out_.erase(it);
      if (joins_out_.count(key) > 0) continue;
      auto waiting = leaves_after_join_.find(key);
      if (waiting == leaves_after_join_.end()) continue;
      for (auto& l : waiting->second) go.push_back(std::move(l));
      leaves_after_join_.erase(waiting);
    }
  }
  for (auto& l : go) submit(leaves_, std::move(l));
}

std::shared_ptr<void> grouping_store::gather(const boost::asio::any_io_executor& ex,
                                             const std::vector<std::string>& names,
                                             std::chrono::milliseconds hold) {
  auto g = std::make_shared<gathering>();
  {
    std::lock_guard lock(mu_);
    for (const auto& n : names)
      if (gathered_.emplace(n, g).second) g->awaited.insert(n);
    if (g->awaited.empty()) return nullptr;
  }
  // The hold's bound: a member that never makes a store call must not keep the others back. The
  // timer holds the gathering weakly: once the handle is dropped it only finds it gone.
  std::weak_ptr<grouping_store> weak_self = shared_from_this();
  std::weak_ptr<gathering> weak_g = g;
  auto timer = std::make_shared<detail::steady_timer>(ex, hold);
  timer->async_wait([timer, weak_self, weak_g](boost::system::error_code) {
    auto self = weak_self.lock();
    auto g = weak_g.lock();
    if (self && g && self->close(g)) self->at_bound_.fetch_add(1, std::memory_order_relaxed);
  });
  // The handle: dropping it ends the gathering (the caller's set is under way or over).
  return std::shared_ptr<void>(nullptr, [weak_self, g](void*) {
    if (auto self = weak_self.lock()) self->close(g);
  });
}

void grouping_store::heard_from(const std::string& name) {
  heard_by_takes(name);
  reads_->heard_from(name);
}

void grouping_store::heard_by_takes(const std::string& name) {
  std::shared_ptr<gathering> complete;
  {
    std::lock_guard lock(mu_);
    if (gathered_.empty()) return;
    complete = note_heard(name);
  }
  if (complete) close(complete);
}

std::shared_ptr<grouping_store::gathering> grouping_store::note_heard(const std::string& name) {
  auto it = gathered_.find(name);
  if (it == gathered_.end()) return nullptr;
  auto g = std::move(it->second);
  gathered_.erase(it);
  g->awaited.erase(name);
  return g->awaited.empty() ? g : nullptr;
}

bool grouping_store::hold_if_gathered(pending& p, bool take, std::shared_ptr<gathering>& complete) {
  const std::string name = p.write.name();
  auto it = gathered_.find(name);
  if (it == gathered_.end()) return false;
  auto& g = *it->second;
  (take ? g.takes : g.releases).push_back(std::move(p));
  complete = note_heard(name);
  return true;
}

void grouping_store::end_gathering(gathering& g, std::vector<pending>& takes, std::vector<pending>& releases) {
  g.open = false;
  for (const auto& n : g.awaited) gathered_.erase(n);
  g.awaited.clear();
  takes = std::move(g.takes);
  releases = std::move(g.releases);
}

bool grouping_store::close(const std::shared_ptr<gathering>& g) {
  std::vector<pending> takes, releases;
  {
    std::lock_guard lock(mu_);
    if (!g->open) return false;
    end_gathering(*g, takes, releases);
  }
  send_now(takes_, std::move(takes));
  send_now(releases_, std::move(releases));
  return true;
}

void grouping_store::send_now(queue& q, std::vector<pending> ops) {
  std::vector<pending> expired;
  const auto now = boot_clock::now();
  for (std::size_t i = 0; i < ops.size();) {
    std::vector<pending> command;
    for (; i < ops.size() && command.size() < max_per_command; ++i)
      (past_bound(ops[i].write, now) ? expired : command).push_back(std::move(ops[i]));
    if (command.empty()) continue;
    {
      std::lock_guard lock(mu_);
      ++q.in_flight;  // over the limit if need be: the set's operations wait for nothing else
    }
    send(q, std::move(command));
  }
  for (auto& e : expired) e.done(unsent());
}

void grouping_store::submit(queue& q, pending p) {
  std::vector<pending> now, expired;
  std::shared_ptr<gathering> complete;
  {
    std::lock_guard g(mu_);
    // Held for its set: nothing of the queue moves; the set goes once complete. Only takes and
    // releases are held (a line write was heard from as it came).
    const bool holdable = &q == &takes_ || &q == &releases_;
    if (gathered_.empty() || !holdable || !hold_if_gathered(p, &q == &takes_, complete)) {
      q.waiting.push_back(std::move(p));
      if (q.in_flight >= q.in_flight_limit) return;  // it goes with the command after the next reply
      now = next_command(q, expired);
    }
  }
  if (complete) {
    close(complete);
    return;
  }
  for (auto& e : expired) e.done(unsent());
  send(q, std::move(now));
}

std::vector<grouping_store::pending> grouping_store::next_command(queue& q, std::vector<pending>& expired) {
  const auto now = boot_clock::now();
  std::vector<pending> ops;
  // Never two statements on one document in one command. The set is filled from the second
  // candidate on: a lone operation (the uncontended cycle's every take and release) costs no
  // node and no copy of its name.
  std::unordered_set<std::string> names;
  auto seen = [&](const std::string& name) {
    if (ops.empty()) return false;
    if (names.empty()) names.insert(ops.front().write.name());
    return !names.insert(name).second;
  };
  for (auto it = q.waiting.begin(); it != q.waiting.end() && ops.size() < max_per_command;) {
    const auto& w = it->write;
    if (past_bound(w, now)) {
      expired.push_back(std::move(*it));
      it = q.waiting.erase(it);
      continue;
    }
    if (seen(w.name())) {
      ++it;
      continue;
    }
    if (&q == &joins_) joins_out_.insert(entry_key(w.line));  // before the lock is let go
    ops.push_back(std::move(*it));
    it = q.waiting.erase(it);
  }
  if (!ops.empty()) ++q.in_flight;
  return ops;
}

void grouping_store::send(queue& q, std::vector<pending> ops) {
  if (ops.empty()) return;
  auto self = shared_from_this();
  if (ops.size() == 1) {  // alone: its own single command, exactly as without grouping
    // Moved, not copied: a take's request holds several strings. Only a join keeps a copy, for
    // joins_answered; a take or a release needs none once it is sent.
    const grouped_write w = std::move(ops.front().write);
    std::vector<pending> sent;
    if (&q == &joins_) sent.push_back({w, nullptr});
    auto done = [self, &q, answer = std::move(ops.front().done), sent = std::move(sent)](outcome<bool> r) mutable {
      answer(std::move(r));
      if (&q == &self->joins_) self->joins_answered(sent);
      self->finished(q);
    };
    switch (w.what) {
      case grouped_write::kind::take: return inner_->take(w.take, std::move(done));
      case grouped_write::kind::release:
        return inner_->release(w.release.name, w.release.owner, w.release.token, std::move(done));
      case grouped_write::kind::join:
        return inner_->join_line(w.line.name, w.line.owner, w.line.ticket, std::move(done));
      case grouped_write::kind::leave: return inner_->leave_line(w.line.name, w.line.owner, std::move(done));
    }
    return;
  }
  saved_.fetch_add(ops.size() - 1, std::memory_order_relaxed);
  std::vector<grouped_write> writes;
  writes.reserve(ops.size());
  for (auto& op : ops) writes.push_back(op.write);
  inner_->write_grouped(writes, [self, &q, ops = std::move(ops)](outcome<std::vector<grouped_outcome>> r) mutable {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto judged = r.ec || i >= r.value.size() ? grouped_outcome::unknown : r.value[i];
      if (!r.ec && judged == grouped_outcome::unknown) {
        ops[i].done(unjudged());
        continue;
      }
      outcome<bool> one = failure_from<bool>(r);
      one.value = !r.ec && judged == grouped_outcome::applied;
      // A join or take judged missed by a read that may predate the command (grouped_write.hpp's
      // judge): "not applied" as far as the read can tell, flagged so (acquire_fsm::resume of
      // acquire_input::joined and ::take). A lone command's miss is the server's own answer,
      // never flagged.
      const bool judged_by_read = ops[i].write.what == grouped_write::kind::join || ops[i].write.what == grouped_write::kind::take;
      if (!r.ec && judged == grouped_outcome::missed && judged_by_read) one.ambiguous = true;
      ops[i].done(std::move(one));
    }
    if (&q == &self->joins_) self->joins_answered(ops);
    self->finished(q);
  });
}

void grouping_store::finished(queue& q) {
  std::vector<pending> next, expired;
  {
    std::lock_guard g(mu_);
    --q.in_flight;
    // Still at the limit after a gathered set went over it (send_now): the queue waits.
    if (q.in_flight < q.in_flight_limit) next = next_command(q, expired);
  }
  for (auto& e : expired) e.done(unsent());
  send(q, std::move(next));
}

}  // namespace mongolock::detail
