// The first reads of a set's waits as one find (read_gathering.hpp; docs/design.md section 10).
#include "engine/read_gathering.hpp"
#include "model/clocks.hpp"


namespace mongolock::detail {

read_gatherer::read_gatherer(std::shared_ptr<lock_store> inner) : inner_(std::move(inner)) {}

std::shared_ptr<void> read_gatherer::open(const boost::asio::any_io_executor& ex, const std::vector<std::string>& names,
                                          std::chrono::milliseconds hold) {
  auto g = std::make_shared<gathering>();
  g->ex = ex;
  g->hold = hold;
  {
    std::lock_guard lock(mu_);
    for (const auto& n : names)
      if (open_.emplace(n, g).second) g->awaited.insert(n);
    if (g->awaited.size() < 2) {  // nothing to put together
      for (const auto& n : g->awaited) open_.erase(n);
      return nullptr;
    }
  }
  std::weak_ptr<read_gatherer> weak_self = shared_from_this();
  return std::shared_ptr<void>(nullptr, [weak_self, g](void*) {
    if (auto self = weak_self.lock()) self->close(g);
  });
}

bool read_gatherer::hold(const std::string& name, read_mode m, lock_store::reply<outcome<lock_doc>>& r) {
  // Majority reads only: a find answers every name at one read concern, and the waits read at
  // majority (section 3); any other read goes alone.
  if (m != read_mode::majority) return false;
  std::shared_ptr<gathering> g, complete;
  bool first = false;
  {
    std::lock_guard lock(mu_);
    if (open_.empty()) return false;
    const auto it = open_.find(name);
    if (it == open_.end()) return false;
    g = it->second;
    first = g->reads.empty();
    g->reads.push_back(held_read{name, std::move(r)});
    complete = note(name);
  }
  if (complete) {
    close(complete);
  } else if (first) {
    start_bound(g);
  }
  return true;
}

void read_gatherer::heard_from(const std::string& name) {
  std::shared_ptr<gathering> complete;
  {
    std::lock_guard lock(mu_);
    if (open_.empty()) return;
    complete = note(name);
  }
  if (complete) close(complete);
}

std::shared_ptr<read_gatherer::gathering> read_gatherer::note(const std::string& name) {
  const auto it = open_.find(name);
  if (it == open_.end()) return nullptr;
  auto g = std::move(it->second);
  open_.erase(it);
  g->awaited.erase(name);
  return g->awaited.empty() ? g : nullptr;
}

// The bound counts from the first read held, not from the opening: a writer's reads come only
// after its takes' round trip, however long that is.
void read_gatherer::start_bound(const std::shared_ptr<gathering>& g) {
  std::weak_ptr<read_gatherer> weak_self = shared_from_this();
  std::weak_ptr<gathering> weak_g = g;
  auto timer = std::make_shared<detail::steady_timer>(g->ex, g->hold);
  timer->async_wait([timer, weak_self, weak_g](boost::system::error_code) {
    auto self = weak_self.lock();
    if (auto g = weak_g.lock(); self && g) self->close(g);
  });
}

void read_gatherer::close(const std::shared_ptr<gathering>& g) {
  std::vector<held_read> reads;
  {
    std::lock_guard lock(mu_);
    if (!g->open) return;
    g->open = false;
    for (const auto& n : g->awaited) {
      const auto it = open_.find(n);
      if (it != open_.end() && it->second == g) open_.erase(it);
    }
    g->awaited.clear();
    reads = std::move(g->reads);
  }
  if (reads.empty()) return;
  if (reads.size() == 1) {
    inner_->read(reads.front().name, read_mode::majority, std::move(reads.front().reply));
    return;
  }
  saved_.fetch_add(reads.size() - 1, std::memory_order_relaxed);
  auto batch = std::make_shared<std::vector<held_read>>(std::move(reads));
  std::vector<std::string> names;
  names.reserve(batch->size());
  for (const auto& h : *batch) names.push_back(h.name);
  inner_->read_each(names, read_mode::majority, [batch](outcome<std::vector<lock_doc>> r) {
    auto each = each_of_find(std::move(r), batch->size());
    for (std::size_t i = 0; i < batch->size(); ++i) (*batch)[i].reply(std::move(each[i]));
  });
}

}  // namespace mongolock::detail
