#include "engine/name_turns.hpp"

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <algorithm>

namespace mongolock::detail {

namespace asio = boost::asio;

std::shared_ptr<parked_acquire> name_turns::pass(const std::string& name, bool free_if_none) {
  std::lock_guard g(mu_);
  auto it = taken_.find(name);
  if (it == taken_.end()) return nullptr;
  auto& q = it->second.queue;
  if (q.empty()) {
    if (free_if_none) taken_.erase(it);
    return nullptr;
  }
  auto next = std::move(q.front());
  q.pop_front();
  return next;
}

std::shared_ptr<parked_acquire> name_turns::first(const std::string& name) const {
  std::lock_guard g(mu_);
  auto it = taken_.find(name);
  if (it == taken_.end() || it->second.queue.empty()) return nullptr;
  return it->second.queue.front();
}

bool name_turns::remove(const std::shared_ptr<parked_acquire>& w) {
  std::lock_guard g(mu_);
  auto it = taken_.find(w->name);
  if (it == taken_.end()) return false;
  auto& q = it->second.queue;
  auto at = std::find(q.begin(), q.end(), w);
  if (at == q.end()) return false;
  q.erase(at);
  return true;
}

std::vector<std::shared_ptr<parked_acquire>> name_turns::drain() {
  std::lock_guard g(mu_);
  std::vector<std::shared_ptr<parked_acquire>> out;
  for (auto& [_, t] : taken_) {
    for (auto& w : t.queue) out.push_back(std::move(w));
    t.queue.clear();
  }
  return out;
}

std::vector<std::shared_ptr<parked_acquire>> name_turns::drain_unbounded(const std::string& name) {
  std::lock_guard g(mu_);
  std::vector<std::shared_ptr<parked_acquire>> out;
  auto it = taken_.find(name);
  if (it == taken_.end()) return out;
  auto& q = it->second.queue;
  for (auto& w : q)
    if (!w->deadline) out.push_back(std::move(w));
  std::erase(q, nullptr);
  return out;
}

void finish_parked(const std::shared_ptr<parked_acquire>& w, boost::system::error_code ec, std::string why,
                   const asio::any_io_executor& fallback) {
  // Posted, never inline (this may run inside the caller's cancellation emit or a timer), then
  // on to the handler's own executor, where its slot may be cleared.
  asio::post(fallback, [w, ec, why = std::move(why), fallback]() mutable {
    auto ex = asio::get_associated_executor(w->handler, fallback);
    asio::dispatch(ex, [w = std::move(w), ec, why = std::move(why)]() mutable {
      if (w->timer) w->timer->cancel();
      if (w->slot.is_connected()) w->slot.clear();
      if (w->diag) w->diag->reason = std::move(why);
      auto h = std::move(w->handler);
      std::move(h)(ec, lease{});
    });
  });
}

}  // namespace mongolock::detail
