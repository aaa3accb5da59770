#include "engine/provider_life.hpp"

#include <algorithm>

namespace mongolock::detail {

void provider_life::start_work() {
  std::lock_guard g(mu_);
  ++working_;
}

void provider_life::end_work() {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard g(mu_);
    if (--working_ == 0) ready.swap(idle_waiters_);
  }
  for (auto& f : ready) f();
}

void provider_life::when_idle(std::function<void()> f) {
  {
    std::lock_guard g(mu_);
    if (working_ > 0) {
      idle_waiters_.push_back(std::move(f));
      return;
    }
  }
  f();
}

void provider_life::close() {
  std::vector<std::function<void()>> cancel;
  {
    std::lock_guard g(mu_);
    if (!closing_) failure_ = {};  // the first shutdown reports what fails from here on
    closing_ = true;  // under mu_, so add_live (also under mu_) cannot miss it
    for (auto& [_, c] : cancellers_) cancel.push_back(c);
  }
  for (auto& c : cancel) c();
}

std::uint64_t provider_life::on_close(std::function<void()> cancel) {
  std::lock_guard g(mu_);
  cancellers_.emplace(++next_canceller_, std::move(cancel));
  return next_canceller_;
}

void provider_life::forget_on_close(std::uint64_t id) {
  std::lock_guard g(mu_);
  cancellers_.erase(id);
}

bool provider_life::add_live(const std::string& owner, const std::shared_ptr<lease_state>& s) {
  std::lock_guard g(mu_);
  if (closing_) return false;
  live_[owner] = s;
  return true;
}

void provider_life::remove_live(const std::string& owner) {
  std::lock_guard g(mu_);
  live_.erase(owner);
}

std::vector<std::shared_ptr<lease_state>> provider_life::live_leases() const {
  std::lock_guard g(mu_);
  std::vector<std::shared_ptr<lease_state>> out;
  for (const auto& [_, w] : live_)
    if (auto s = w.lock()) out.push_back(std::move(s));
  return out;
}

std::size_t provider_life::live_count() const {
  std::lock_guard g(mu_);
  return live_.size();
}

void provider_life::note_failure(boost::system::error_code ec, std::string why) {
  std::lock_guard g(mu_);
  failure_ = {ec, std::move(why)};
}

void provider_life::note_ladder_until(steady_clock::time_point t) {
  std::lock_guard g(mu_);
  ladder_until_ = std::max(ladder_until_, t);
}

steady_clock::time_point provider_life::ladder_until() const {
  std::lock_guard g(mu_);
  return ladder_until_;
}

provider_life::noted_failure provider_life::failure() const {
  std::lock_guard g(mu_);
  return failure_;
}

}  // namespace mongolock::detail
