#include "detail/worker_pool.hpp"

#include "detail/driver.hpp"

namespace mongolock::detail {

worker_pool::worker_pool(driver& db, std::size_t threads) : db_(db) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { run(i); });
}

bool worker_pool::post(job j) {
  std::unique_lock lock(mu_);
  if (stopping_) return false;
  queue_.push_back(std::move(j));
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

void worker_pool::run(std::size_t) {
  // One connection per worker for its whole life (the pool's maxPoolSize equals the worker count,
  // so this never blocks).
  db_.with_client([this](mongoc_client_t* client) {
    idle_slot slot;
    std::unique_lock lock(mu_);
    for (;;) {
      if (!queue_.empty()) {
        job j = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        j(client);
        j = nullptr;  // destroy captures outside the lock
        lock.lock();
        continue;
      }
      if (stopping_) return 0;
      slot.signalled = false;
      idle_.push_back(&slot);
      slot.wake.wait(lock, [&] { return slot.signalled; });
    }
  });
}

}  // namespace mongolock::detail
