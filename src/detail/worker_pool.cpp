#include "detail/worker_pool.hpp"

namespace mongolock::detail {

worker_pool::worker_pool(connector connect, std::size_t threads) : connect_(std::move(connect)) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { run(i); });
}

bool worker_pool::post(job j, lane l) {
  std::unique_lock lock(mu_);
  if (stopping_) return false;
  (l == lane::maintenance ? urgent_ : queue_).push_back(std::move(j));
  if (!idle_.empty()) {
    idle_slot* hot = idle_.back();  // the most recently idle worker: warm thread, warm connection
    idle_.pop_back();
    hot->signalled = true;
    hot->wake.notify_one();
  }
  return true;
}

void worker_pool::join() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (idle_slot* s : idle_) {
      s->signalled = true;
      s->wake.notify_one();
    }
    idle_.clear();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

worker_pool::job worker_pool::pop() {
  auto& from = urgent_.empty() ? queue_ : urgent_;
  job j = std::move(from.front());
  from.pop_front();
  return j;
}

void worker_pool::run(std::size_t) {
  // One connection per worker for its whole life (the pool's maxPoolSize equals the worker count,
  // so this never blocks).
  connect_([this](mongoc_client_t* client) {
    idle_slot slot;
    std::unique_lock lock(mu_);
    for (;;) {
      if (has_work()) {
        job j = pop();
        lock.unlock();
        j(client);
        j = nullptr;  // destroy captures outside the lock
        lock.lock();
        continue;
      }
      if (stopping_) return;
      slot.signalled = false;
      idle_.push_back(&slot);
      slot.wake.wait(lock, [&] { return slot.signalled; });
    }
  });
}

}  // namespace mongolock::detail
