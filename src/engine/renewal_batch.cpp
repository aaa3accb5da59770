#include "engine/renewal_batch.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <algorithm>
#include <map>

#include "mongolock/error.hpp"

namespace mongolock::detail {

namespace asio = boost::asio;

namespace {
renewal_outcome not_renewed(boost::system::error_code ec, const char* why) {
  renewal_outcome o;
  o.ec = ec;
  o.message = why;
  return o;
}
}  // namespace

renewal_batch::renewal_batch(const asio::any_io_executor& ex, std::shared_ptr<lock_store> store)
    : strand_(asio::make_strand(ex)), store_(std::move(store)), timer_(strand_) {}

void renewal_batch::submit(request r, answer done) {
  asio::post(strand_, [self = shared_from_this(), e = entry{std::move(r), std::move(done)}]() mutable {
    self->pending_.push_back(std::move(e));
    self->arm();
  });
}

void renewal_batch::forget(std::string owner) {
  asio::post(strand_, [self = shared_from_this(), owner = std::move(owner)] {
    auto& p = self->pending_;
    for (auto it = p.begin(); it != p.end();) {
      if (it->req.lease.owner != owner) {
        ++it;
        continue;
      }
      auto done = std::move(it->done);
      it = p.erase(it);
      done(not_renewed(asio::error::operation_aborted, "the lease ended"));
    }
    self->arm();
  });
}

void renewal_batch::arm() {
  if (pending_.empty()) {
    // Nothing to renew: no timer keeps the io_context busy.
    if (armed_for_) timer_.cancel();
    armed_for_.reset();
    return;
  }
  auto first = std::min_element(pending_.begin(), pending_.end(),
                                [](const entry& a, const entry& b) { return a.req.due < b.req.due; })
                   ->req.due;
  if (armed_for_ && *armed_for_ <= first) return;
  armed_for_ = first;
  timer_.expires_at(first);  // cancels the earlier wait, whose handler then does nothing
  timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    self->armed_for_.reset();
    self->fire();
  });
}

void renewal_batch::fire() {
  const auto now = boot_clock::now();
  // Grouped by expiry (each command sets one expiry_ms); std::map: a stable order of commands.
  std::map<std::chrono::milliseconds, std::vector<entry>> going;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->req.deadline <= now) {
      // Its holder has been told to stop (or is about to be): a renewal now would revive it.
      auto done = std::move(it->done);
      it = pending_.erase(it);
      done(not_renewed(make_error_code(errc::timeout), "the lease's local deadline passed before its renewal went out"));
      continue;
    }
    if (it->req.earliest > now) {
      ++it;
      continue;
    }
    going[it->req.expiry].push_back(std::move(*it));
    it = pending_.erase(it);
  }
  for (auto& [expiry, group] : going) {
    for (std::size_t from = 0; from < group.size(); from += max_per_command) {
      const auto to = std::min(group.size(), from + max_per_command);
      std::vector<entry> batch(std::make_move_iterator(group.begin() + static_cast<std::ptrdiff_t>(from)),
                               std::make_move_iterator(group.begin() + static_cast<std::ptrdiff_t>(to)));
      send(std::move(batch), expiry);
    }
  }
  arm();
}

void renewal_batch::send(std::vector<entry> batch, std::chrono::milliseconds expiry) {
  std::vector<held_lease> held;
  held.reserve(batch.size());
  for (auto& e : batch) held.push_back(e.req.lease);
  // Measured before the command is queued: never later than the real send.
  const auto sent = boot_clock::now();
  commands_.fetch_add(1, std::memory_order_relaxed);
  store_->renew(held, expiry, [batch = std::move(batch), sent, weak = weak_from_this()](outcome<std::vector<bool>> r) mutable {
    // A command abandoned at shutdown got no answer: it has no round trip to count.
    if (auto self = weak.lock(); self && r.ec != boost::asio::error::operation_aborted)
      self->count_round_trip(boot_clock::now() - sent);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      renewal_outcome o;
      o.ec = r.ec;
      o.message = r.message;
      o.ambiguous = r.ambiguous;
      o.value = !r.ec && i < r.value.size() && r.value[i];
      o.sent = sent;
      batch[i].done(std::move(o));
    }
  });
}

void renewal_batch::count_round_trip(std::chrono::nanoseconds took) noexcept {
  took = std::max(took, std::chrono::nanoseconds{0});
  round_trip_ns_.fetch_add(static_cast<std::uint64_t>(took.count()), std::memory_order_relaxed);
  std::size_t bucket = 0;
  while (bucket < stats::renewal_bucket_bounds.size() && took > stats::renewal_bucket_bounds[bucket]) ++bucket;
  round_trip_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
}

void renewal_batch::round_trips(stats& s) const noexcept {
  s.renewal_time = std::chrono::nanoseconds{static_cast<std::int64_t>(round_trip_ns_.load(std::memory_order_relaxed))};
  for (std::size_t i = 0; i < s.renewal_histogram.size(); ++i)
    s.renewal_histogram[i] = round_trip_buckets_[i].load(std::memory_order_relaxed);
}

}  // namespace mongolock::detail
