#include "memory_store.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include "model/clocks.hpp"
#include <memory>
#include <unordered_set>

#include "mongolock/error.hpp"
#include "store/bson_util.hpp"
#include "store/mongo_commands.hpp"

namespace test {

namespace asio = boost::asio;
namespace ml = mongolock;
using namespace mongolock::detail;

namespace {
template <class T>
outcome<T> error(ml::errc e, bool ambiguous, const char* text) {
  outcome<T> o;
  o.ec = make_error_code(e);
  o.ambiguous = ambiguous;
  o.message = text;
  return o;
}
}  // namespace

void memory_store::inject(op o, fault f) {
  std::lock_guard g(mu_);
  faults_[o].push_back(f);
}
void memory_store::put(const std::string& name, lock_doc doc) {
  std::lock_guard g(mu_);
  doc.exists = true;
  docs_[name] = doc;
}
void memory_store::rollback() {
  std::lock_guard g(mu_);
  if (committed_) docs_ = *std::exchange(committed_, std::nullopt);
}
void memory_store::wipe() {
  std::lock_guard g(mu_);
  docs_.clear();
  if (committed_) committed_->clear();
}
std::vector<std::string> memory_store::expire_idle(std::chrono::milliseconds idle, std::int64_t now_ms) {
  std::lock_guard g(mu_);
  const auto expired = [&](const auto& entry) {
    const auto& d = entry.second;
    return d.idle_since_ms > 0 && d.idle_since_ms + idle.count() <= now_ms;
  };
  std::vector<std::string> gone;
  for (const auto& entry : docs_)
    if (expired(entry)) gone.push_back(entry.first);
  std::erase_if(docs_, expired);
  if (committed_) std::erase_if(*committed_, expired);
  note_history();
  return gone;
}
lock_doc memory_store::get(const std::string& name) const {
  std::lock_guard g(mu_);
  auto it = docs_.find(name);
  return it == docs_.end() ? lock_doc{} : it->second;
}
std::vector<call_record> memory_store::calls() const {
  std::lock_guard g(mu_);
  return calls_;
}
memory_store::wire_count memory_store::wire() const {
  wire_count w;
  for (const auto& c : calls()) {
    if (c.what == op::prepare) continue;
    ++w.commands;
    w.statements += c.what == op::write_grouped ? static_cast<std::size_t>(c.token) : 1;
  }
  w.commands += grouped_reads();
  w.statements += grouped_reads();
  return w;
}

std::size_t memory_store::documents() const {
  std::lock_guard g(mu_);
  return docs_.size();
}

std::size_t memory_store::count(op o) const {
  std::lock_guard g(mu_);
  std::size_t n = 0;
  for (auto& c : calls_) n += c.what == o;
  return n;
}

std::optional<fault> memory_store::next_fault(op o) {
  std::lock_guard g(mu_);
  auto& q = faults_[o];
  if (q.empty()) return std::nullopt;
  fault f = q.front();
  q.pop_front();
  return f;
}

void memory_store::unreachable_for(std::chrono::milliseconds window, std::chrono::milliseconds selection) {
  std::lock_guard g(mu_);
  unreachable_until_ = ml::detail::steady_clock::now() + window;
  selection_ = selection;
}

bool memory_store::unreachable_now() const {
  std::lock_guard g(mu_);
  return ml::detail::steady_clock::now() < unreachable_until_;
}

template <class T>
bool memory_store::out_of_reach(reply<outcome<T>>& r) {
  std::chrono::milliseconds wait{0};
  {
    std::lock_guard g(mu_);
    const auto now = ml::detail::steady_clock::now();
    if (now >= unreachable_until_) return false;
    wait = std::min(selection_, std::chrono::ceil<std::chrono::milliseconds>(unreachable_until_ - now));
  }
  answer(std::move(r), error<T>(ml::errc::server_unavailable, false, "No suitable servers found: serverSelectionTimeoutMS expired"),
         std::max(wait, std::chrono::milliseconds{1}));
  return true;
}

namespace {
// What a write can change (the informational dates aside).
bool same_state(const lock_doc& a, const lock_doc& b) {
  return a.exists == b.exists && a.held == b.held && a.line == b.line && a.tickets == b.tickets &&
         a.waiting == b.waiting && a.last_run_token == b.last_run_token && a.declared == b.declared;
}
}  // namespace

void memory_store::keep_history() {
  std::lock_guard g(mu_);
  keep_history_ = true;
  note_history();
}

void memory_store::note_history() {
  if (!keep_history_) return;
  const auto now = ml::detail::steady_clock::now();
  for (const auto& [name, doc] : view_for(read_mode::majority)) {
    auto& h = history_[name];
    if (h.empty() || !same_state(h.back().second, doc)) h.emplace_back(now, doc);
  }
  // A document removed since: its absence is a state too.
  for (auto& [name, h] : history_)
    if (!view_for(read_mode::majority).contains(name) && h.back().second.exists) h.emplace_back(now, lock_doc{});
}

std::vector<std::pair<ml::detail::steady_clock::time_point, lock_doc>> memory_store::history_of(const std::string& name) const {
  std::lock_guard g(mu_);
  auto it = history_.find(name);
  return it == history_.end() ? decltype(history_)::mapped_type{} : it->second;
}

lock_doc memory_store::committed_as_of(const std::string& name, ml::detail::steady_clock::time_point t) const {
  std::lock_guard g(mu_);
  lock_doc out;
  if (auto it = history_.find(name); it != history_.end())
    for (const auto& [at, doc] : it->second)
      if (at <= t) out = doc;
  return out;
}

void memory_store::log(call_record rec) {
  rec.at = ml::detail::steady_clock::now();
  if (on_call_) on_call_(rec);
  std::lock_guard g(mu_);
  calls_.push_back(std::move(rec));
}

template <class T>
void memory_store::answer(reply<outcome<T>> r, outcome<T> v, std::chrono::milliseconds delay) {
  const std::chrono::microseconds wait = delay.count() != 0 ? std::chrono::microseconds(delay) : latency_.load();
  if (wait.count() == 0) {
    asio::post(ex_, [r = std::move(r), v = std::move(v)]() mutable { r(std::move(v)); });
    return;
  }
  auto timer = std::make_shared<ml::detail::steady_timer>(ex_, wait);
  timer->async_wait([timer, r = std::move(r), v = std::move(v)](boost::system::error_code) mutable { r(std::move(v)); });
}

template <class T>
bool memory_store::too_large(std::size_t bytes, reply<outcome<T>>& r) {
  if (bytes <= max_bson_) return false;
  const auto why = "a command of " + std::to_string(bytes) + " bytes: over maxBsonObjectSize, " +
                   std::to_string(max_bson_) + " (refused by the driver before sending)";
  answer(std::move(r), error<T>(ml::errc::server_error, false, why.c_str()), std::chrono::milliseconds{0});
  return true;
}

template <class T>
bool memory_store::refused(const std::optional<fault>& f, reply<outcome<T>>& r) {
  if (!f || (f->what != fault::kind::unavailable && f->what != fault::kind::refused)) return false;
  if (f->what == fault::kind::refused)
    answer(std::move(r), error<T>(ml::errc::server_error, false, "command refused by the server"), f->delay);
  else
    answer(std::move(r), error<T>(ml::errc::server_unavailable, false, "no server selected"), f->delay);
  return true;
}

// Applies `apply` (under the lock; returns the successful outcome) as the next fault dictates.
template <class T, class Apply>
void memory_store::write(op o, call_record rec, reply<outcome<T>> r, Apply apply) {
  // libmongoc retries every single-document write once; a multi-document update (update_many:
  // a renewal of 2+ leases, whose record counts them in `token`, and release_owners) never.
  const bool resendable = o != op::release_owners && !(o == op::renew && rec.token > 1);
  log(std::move(rec));
  if (out_of_reach(r)) return;
  auto f = next_fault(o);
  // A committed write lands in the majority's view too (kept apart only after an `uncommitted` one).
  // While they are apart, a write that commits is one the next primary accepts: it is answered as
  // the majority's view took it (the deposed primary's view takes it too, for its local reads).
  // Answered from the old primary's view, a take refused there but applied to the majority
  // would name a holder that was told it lost.
  auto applied = [this, apply]() mutable {
    std::lock_guard g(mu_);
    if (!committed_) {
      auto answer = apply();
      note_history();
      return answer;
    }
    std::swap(docs_, *committed_);
    auto answer = apply();
    std::swap(docs_, *committed_);
    apply();
    note_history();
    return answer;
  };
  if (!f) return answer(std::move(r), applied(), std::chrono::milliseconds{0});
  switch (f->what) {
    case fault::kind::uncommitted: {
      std::lock_guard g(mu_);
      if (!committed_) committed_ = docs_;
      apply();
      return answer(std::move(r), error<T>(ml::errc::server_unavailable, true, "socket error: reply lost (primary stepping down)"), f->delay);
    }
    case fault::kind::driver_resend: {
      {
        std::lock_guard g(mu_);
        if (!committed_) committed_ = docs_;
        apply();
      }
      auto failover = std::make_shared<ml::detail::steady_timer>(ex_, f->delay);
      failover->async_wait([this, failover, applied, resendable, late = f->late,
                            r = std::move(r)](boost::system::error_code) mutable {
        rollback();
        if (!resendable)
          return r(error<T>(ml::errc::server_unavailable, true, "socket error: reply lost (primary stepped down; not resent)"));
        if (late.count() == 0) return r(applied());
        // The resend is on its way to the new primary when the caller gives up on it.
        r(error<T>(ml::errc::server_unavailable, true, "socket error: the driver's resend got no reply"));
        auto resent = std::make_shared<ml::detail::steady_timer>(ex_, late);
        resent->async_wait([resent, applied](boost::system::error_code) mutable { applied(); });
      });
      return;
    }
    case fault::kind::write_concern_error:
      applied();
      return answer(std::move(r), error<T>(ml::errc::ambiguous_result, true, "writeConcernError: waiting for replication timed out"), f->delay);
    case fault::kind::stream_error_before:
      return answer(std::move(r), error<T>(ml::errc::server_unavailable, true, "socket error before the write"), f->delay);
    case fault::kind::stream_error_after:
      applied();
      return answer(std::move(r), error<T>(ml::errc::server_unavailable, true, "socket error: reply lost"), f->delay);
    case fault::kind::hang:
      return answer(std::move(r), applied(), f->delay);
    case fault::kind::apply_late: {
      auto timer = std::make_shared<ml::detail::steady_timer>(ex_, f->delay);
      timer->async_wait([timer, applied](boost::system::error_code) mutable { applied(); });
      return answer(std::move(r), error<T>(ml::errc::server_unavailable, true, "socket error: request in flight"),
                    std::chrono::milliseconds{0});
    }
    case fault::kind::slow_request: {
      auto timer = std::make_shared<ml::detail::steady_timer>(ex_, f->delay);
      timer->async_wait([this, timer, applied, r = std::move(r)](boost::system::error_code) mutable {
        answer(std::move(r), applied(), std::chrono::milliseconds{0});
      });
      return;
    }
    case fault::kind::unavailable:
      return answer(std::move(r), error<T>(ml::errc::server_unavailable, false, "no server selected"), f->delay);
    case fault::kind::refused:
      return answer(std::move(r), error<T>(ml::errc::server_error, false, "command refused by the server"), f->delay);
    case fault::kind::pass:
    case fault::kind::stale_read:
      return answer(std::move(r), applied(), f->delay);
  }
}

void memory_store::prepare(reply<outcome<server_info>> r) {
  log({op::prepare});
  if (out_of_reach(r)) return;
  auto f = next_fault(op::prepare);
  if (f && f->what == fault::kind::unavailable)
    return answer(std::move(r), error<server_info>(ml::errc::server_unavailable, false, "no server selected"), f->delay);
  server_info info{"8.0.0-memory", 25};
  info.max_bson_bytes = max_bson_;
  answer(std::move(r), success(std::move(info)), f ? f->delay : std::chrono::milliseconds{0});
}

void memory_store::read(const std::string& name, read_mode mode, reply<outcome<lock_doc>> r) {
  log({op::read, name});
  if (out_of_reach(r)) return;
  auto f = next_fault(op::read);
  if (f && f->what == fault::kind::stale_read)
    return answer(std::move(r), success(f->snapshot_at ? committed_as_of(name, *f->snapshot_at) : f->stale), f->delay);
  if (refused(f, r)) return;
  lock_doc d;
  {
    std::lock_guard g(mu_);
    const auto& view = view_for(mode);
    if (auto it = view.find(name); it != view.end()) d = it->second;
  }
  answer(std::move(r), success(std::move(d)), f ? f->delay : std::chrono::milliseconds{0});
}

void memory_store::read_each(const std::vector<std::string>& names, read_mode mode,
                             reply<outcome<std::vector<lock_doc>>> r) {
  {
    bson_doc filter;
    build_find_each(names, filter.get());
    if (too_large(filter.get()->len, r)) return;
  }
  std::string joined;
  for (auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  log({op::read_each, joined, {}, static_cast<std::int64_t>(names.size())});
  if (out_of_reach(r)) return;
  auto f = next_fault(op::read_each);
  if (f && f->what == fault::kind::stale_read && f->snapshot_at) {
    std::vector<lock_doc> out;
    for (auto& n : names) out.push_back(committed_as_of(n, *f->snapshot_at));
    return answer(std::move(r), success(std::move(out)), f->delay);
  }
  if (refused(f, r)) return;
  std::vector<lock_doc> out;
  {
    std::lock_guard g(mu_);
    const auto& view = view_for(mode);
    for (auto& n : names) {
      auto it = view.find(n);
      out.push_back(it == view.end() ? lock_doc{} : it->second);
    }
  }
  answer(std::move(r), success(std::move(out)), f ? f->delay : std::chrono::milliseconds{0});
}

void memory_store::list(reply<outcome<std::vector<named_doc>>> r) {
  log({op::list});
  if (out_of_reach(r)) return;
  auto f = next_fault(op::list);
  if (refused(f, r)) return;
  std::vector<named_doc> out;
  {
    std::lock_guard g(mu_);
    for (auto& [name, doc] : docs_)
      if (!doc.declared) out.push_back({name, doc});  // declarations are not locks
  }
  answer(std::move(r), success(std::move(out)), std::chrono::milliseconds{0});
}

void memory_store::take(const take_request& t, reply<outcome<bool>> r) {
  note_arrival(t);
  call_record rec{op::take, t.name, t.owner, t.token};
  if (t.observed.exists) rec.from = t.observed.held.owner;
  if (t.enroll) rec.enrolled = t.enroll->owner;
  write<bool>(op::take, std::move(rec), std::move(r),
              [this, t, beat = fresh_beat(), now = wall_ms()] { return apply_take(t, beat, now); });
}

outcome<bool> memory_store::apply_take(const take_request& t, std::int64_t beat, std::int64_t now_ms) {
  auto it = docs_.find(t.name);
  lock_doc d;
  if (!t.observed.exists) {
    // The blind take (mongo_commands.cpp's build_swap): a free lock document below our token, with
    // nobody in line if asked, keeping the rest of the document as a $set does; else E11000.
    if (it != docs_.end()) {
      if (!mongolock::detail::blind_take_matches(t, it->second)) return success(false);
      d = it->second;
      d.idle_since_ms = 0;
    }
  } else {
    if (it == docs_.end()) return success(false);
    const auto& h = it->second.held;
    // A free document at a token is matched without its beat (mongo_commands.cpp's build_swap).
    if (h.owner != t.observed.held.owner || h.token != t.observed.held.token ||
        (!t.hand_over && !t.observed.held.owner.empty() && h.beat != t.observed.held.beat))
      return success(false);
    if (t.nobody_waiting && it->second.waiting != t.observed.waiting) return success(false);
    auto line = it->second.line;
    for (auto& e : t.leaving) {
      auto at = std::find(line.begin(), line.end(), e);
      if (at == line.end()) return success(false);
      line.erase(at);
    }
    d.tickets = it->second.tickets;
    d.waiting = it->second.waiting - static_cast<std::int64_t>(t.leaving.size());
    if (t.enroll) {  // a hand-off that also puts the releaser's next waiter in line
      if (d.tickets != t.enroll->ticket) return success(false);
      line.push_back(*t.enroll);
      d.tickets = t.enroll->ticket + 1;
      ++d.waiting;
    }
    d.line = std::move(line);  // the line stays (less whoever left with this take)
    d.last_run_token = it->second.last_run_token;  // a $set of the take's fields keeps the others
  }
  d.exists = true;
  d.held = held_state{t.owner, t.token, beat, t.expiry};
  d.meta = std::make_shared<const mongolock::detail::holder_meta>(t.meta);
  d.acquired_at_ms = d.renewed_at_ms = now_ms;
  docs_[t.name] = d;
  return success(true);
}

void memory_store::renew(const std::vector<held_lease>& held, std::chrono::milliseconds expiry,
                         reply<outcome<std::vector<bool>>> r) {
  // One record per command: its names joined by ',', its token the number of leases.
  std::string names;
  for (auto& h : held) names += (names.empty() ? "" : ",") + h.name;
  call_record rec{op::renew, names, {}, static_cast<std::int64_t>(held.size())};
  write<std::vector<bool>>(op::renew, std::move(rec), std::move(r), [this, held, expiry, beat = fresh_beat(), now = wall_ms()] {
    std::vector<bool> renewed;
    for (auto& h : held) {
      auto it = docs_.find(h.name);
      const bool ours = it != docs_.end() && it->second.held.owner == h.owner && it->second.held.token == h.token;
      renewed.push_back(ours);
      if (!ours) continue;
      it->second.held.beat = beat;
      it->second.held.expiry = expiry;
      it->second.renewed_at_ms = now;
    }
    return success(std::move(renewed));
  });
}

void memory_store::release(const std::string& name, const std::string& owner, std::int64_t token,
                           reply<outcome<bool>> r) {
  write<bool>(op::release, {op::release, name, owner, token}, std::move(r),
              [this, name, owner, token, beat = fresh_beat(), now = wall_ms()] {
                return apply_release(name, owner, token, beat, now);
              });
}

outcome<bool> memory_store::apply_release(const std::string& name, const std::string& owner, std::int64_t token,
                                          std::int64_t beat, std::int64_t now_ms) {
  auto it = docs_.find(name);
  if (it == docs_.end() || it->second.held.owner != owner || it->second.held.token != token) return success(false);
  it->second.held.owner.clear();
  it->second.meta.reset();
  it->second.held.beat = beat;
  it->second.idle_since_ms = std::max(now_ms, mongolock::detail::token_ms(token));  // as set_owner_gone
  return success(true);
}

// As mongo_commands.cpp: every statement applied, the matched count, and when it is short, each
// statement judged by `judge` on the documents read afterwards (never a per-statement answer that
// the server does not give). A `stale_read` fault makes that read show the documents as they were
// before the command (a read served by a node whose majority snapshot predates it).
void memory_store::write_grouped(const std::vector<grouped_write>& writes,
                                 reply<outcome<std::vector<grouped_outcome>>> r) {
  std::string names;
  for (auto& w : writes) names += (names.empty() ? "" : ",") + w.name();
  // Its owner field names the statements' kind (one kind per command).
  static const char* const kinds[] = {"take", "release", "join", "leave"};
  const auto* kind = writes.empty() ? "" : kinds[static_cast<int>(writes.front().what)];
  call_record rec{op::write_grouped, names, kind, static_cast<std::int64_t>(writes.size())};
  for (auto& w : writes) {
    switch (w.what) {
      case grouped_write::kind::take:
        rec.parts.push_back({op::take, w.take.name, w.take.owner, w.take.token});
        if (w.take.observed.exists) rec.parts.back().from = w.take.observed.held.owner;
        if (w.take.enroll) rec.parts.back().enrolled = w.take.enroll->owner;
        break;
      case grouped_write::kind::release:
        rec.parts.push_back({op::release, w.release.name, w.release.owner, w.release.token});
        break;
      case grouped_write::kind::join: rec.parts.push_back({op::join_line, w.line.name, w.line.owner}); break;
      case grouped_write::kind::leave: rec.parts.push_back({op::leave_line, w.line.name, w.line.owner}); break;
    }
  }
  auto stamped = writes;
  for (auto& w : stamped) {
    w.beat = fresh_beat();
    if (w.what == grouped_write::kind::take) note_arrival(w.take);
  }
  bool stale = false;
  {
    std::lock_guard g(mu_);
    // A fault waiting for a single call of a statement's kind does not reach it here: it waits for
    // a later single call, so a test that meant it for this statement would pass without it.
    static const op single[] = {op::take, op::release, op::join_line, op::leave_line};
    for (auto& w : writes)
      if (!faults_[single[static_cast<int>(w.what)]].empty()) ++bypassed_;
    auto& q = faults_[op::write_grouped];
    if (!q.empty() && q.front().what == fault::kind::stale_read) {
      stale = true;
      q.pop_front();
    }
  }
  write<std::vector<grouped_outcome>>(op::write_grouped, std::move(rec), std::move(r), [this, stamped, stale, now = wall_ms()] {
    const auto before = docs_;
    std::size_t matched = 0;
    for (const auto& w : stamped) {
      switch (w.what) {
        case grouped_write::kind::take: matched += apply_take(w.take, w.beat, now).value; break;
        case grouped_write::kind::release:
          matched += apply_release(w.release.name, w.release.owner, w.release.token, w.beat, now).value;
          break;
        case grouped_write::kind::join: matched += apply_join(w.line.name, w.line.owner, w.line.ticket).value; break;
        case grouped_write::kind::leave: matched += apply_leave(w.line.name, w.line.owner).value; break;
      }
    }
    if (matched == stamped.size()) return success(std::vector<grouped_outcome>(stamped.size(), grouped_outcome::applied));
    // A command of leaves only is not followed by a read (mongo_commands.cpp's judge_each).
    if (std::any_of(stamped.begin(), stamped.end(), [](auto& w) { return mongolock::detail::judged_by_reading(w); }))
      ++grouped_reads_;
    const auto& seen = stale ? before : docs_;
    std::vector<grouped_outcome> judged;
    for (const auto& w : stamped) {
      auto it = seen.find(w.name());
      judged.push_back(judge(w, it == seen.end() ? lock_doc{} : it->second));
    }
    return success(std::move(judged));
  });
}

void memory_store::release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                                  reply<outcome<std::int64_t>> r) {
  {
    bson_doc filter, change;
    build_release_owners(names, owners, filter.get(), change.get());
    if (too_large(filter.get()->len + change.get()->len, r)) return;
  }
  // One record per command: its names joined by ',', its token the number of owner ids.
  std::string joined;
  for (auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  call_record rec{op::release_owners, joined, {}, static_cast<std::int64_t>(owners.size())};
  for (const auto& o : owners) rec.parts.push_back({op::release_owners, {}, o});
  write<std::int64_t>(op::release_owners, std::move(rec), std::move(r), [this, names, owners, beat = fresh_beat()] {
    // The filter's two $in lists, as sets: linear in the command (a lease per name, 10^5 of them).
    const std::unordered_set<std::string> named(names.begin(), names.end()), owned(owners.begin(), owners.end());
    std::int64_t n = 0;
    for (const auto& name : named) {
      auto it = docs_.find(name);
      if (it == docs_.end() || it->second.held.owner.empty() || !owned.contains(it->second.held.owner)) continue;
      auto& doc = it->second;
      doc.held.owner.clear();
      doc.meta.reset();
      doc.held.beat = beat;
      ++n;
    }
    return success(n);
  });
}

void memory_store::join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                             reply<outcome<bool>> r) {
  write<bool>(op::join_line, {op::join_line, name, owner, ticket}, std::move(r),
              [this, name, owner, ticket] { return apply_join(name, owner, ticket); });
}

outcome<bool> memory_store::apply_join(const std::string& name, const std::string& owner, std::int64_t ticket) {
  auto it = docs_.find(name);
  if (it == docs_.end() || it->second.tickets != ticket) return success(false);
  auto& d = it->second;
  // As MongoDB's `$set line.<owner>`: an entry already there gets the new ticket (one entry per
  // owner id), and `$inc waiting` counts it again all the same.
  auto mine = std::find_if(d.line.begin(), d.line.end(), [&](auto& e) { return e.owner == owner; });
  if (mine != d.line.end()) mine->ticket = ticket;
  else d.line.push_back({owner, ticket});
  std::stable_sort(d.line.begin(), d.line.end(), [](auto& a, auto& b) { return a.ticket < b.ticket; });
  d.tickets = ticket + 1;
  ++d.waiting;
  return success(true);
}

void memory_store::leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) {
  write<bool>(op::leave_line, {op::leave_line, name, owner}, std::move(r),
              [this, name, owner] { return apply_leave(name, owner); });
}

outcome<bool> memory_store::apply_leave(const std::string& name, const std::string& owner) {
  auto it = docs_.find(name);
  if (it == docs_.end()) return success(false);
  auto& line = it->second.line;
  auto at = std::find_if(line.begin(), line.end(), [&](auto& e) { return e.owner == owner; });
  if (at == line.end()) return success(false);
  line.erase(at);
  --it->second.waiting;
  return success(true);
}

void memory_store::refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                                reply<outcome<bool>> r) {
  write<bool>(op::refresh_line, {op::refresh_line, name, owner, ticket}, std::move(r), [this, name, owner, ticket] {
    auto it = docs_.find(name);
    if (it == docs_.end()) return success(false);
    auto& line = it->second.line;
    return success(std::find(line.begin(), line.end(), mongolock::detail::line_entry{owner, ticket}) != line.end());
  });
}

void memory_store::proclaim(const std::string& name, const std::string& owner, std::int64_t token,
                            const std::string& value, reply<outcome<bool>> r) {
  write<bool>(op::proclaim, {op::proclaim, name, owner, token}, std::move(r), [this, name, owner, token, value] {
    auto it = docs_.find(name);
    if (it == docs_.end() || it->second.held.owner != owner || it->second.held.token != token) return success(false);
    auto meta = it->second.meta ? *it->second.meta : mongolock::detail::holder_meta{};
    meta.value = value;
    it->second.meta = std::make_shared<const mongolock::detail::holder_meta>(std::move(meta));
    return success(true);
  });
}

void memory_store::record_run(const std::string& name, const std::string& owner, std::int64_t token,
                              reply<outcome<bool>> r) {
  write<bool>(op::record_run, {op::record_run, name, owner, token}, std::move(r), [this, name, owner, token] {
    auto it = docs_.find(name);
    if (it == docs_.end() || it->second.held.owner != owner || it->second.held.token != token) return success(false);
    it->second.last_run_token = token;
    return success(true);
  });
}

void memory_store::declare(const std::string& name, const mongolock::detail::declaration& d,
                           reply<outcome<mongolock::detail::declaration>> r) {
  write<mongolock::detail::declaration>(op::declare, {op::declare, name, d.kind, d.permits}, std::move(r),
                                        [this, name, d] {
                                          // The name's own document, as mongo_commands.cpp's declare.
                                          auto [it, added] = docs_.try_emplace(name);
                                          if (added) {
                                            it->second.exists = true;
                                            it->second.declared = std::make_shared<const mongolock::detail::declaration>(d);
                                          }
                                          if (it->second.declared) return success(*it->second.declared);
                                          return success(mongolock::detail::declaration{"lock", 1});
                                        });
}

void memory_store::force_release(const std::string& name, bool immediate, reply<outcome<std::string>> r) {
  // The driver reads the holder when the call comes, then updates with it in the filter
  // (store/mongo_commands.cpp): the update, however late it applies or is resent, frees only the
  // holder that read saw.
  std::pair<std::string, std::int64_t> seen;
  {
    std::lock_guard g(mu_);
    if (auto it = docs_.find(name); it != docs_.end()) seen = {it->second.held.owner, it->second.held.token};
  }
  write<std::string>(op::force_release, {op::force_release, name}, std::move(r), [this, name, immediate, seen, beat = fresh_beat()] {
    auto it = docs_.find(name);
    if (it == docs_.end() || it->second.held.owner.empty()) return success(std::string());
    if (std::pair{it->second.held.owner, it->second.held.token} != seen) return success(std::string());
    if (seen.first == mongolock::detail::broken_owner && !immediate) return success(std::string());
    auto owner = std::exchange(it->second.held.owner, immediate ? std::string() : mongolock::detail::broken_owner);
    it->second.meta.reset();
    it->second.held.beat = beat;
    if (on_forced_) on_forced_(name, owner, immediate);
    return success(owner);
  });
}

}  // namespace test
