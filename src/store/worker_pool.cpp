#include "store/worker_pool.hpp"

#include "model/clocks.hpp"

#include <chrono>

namespace mongolock::detail {

namespace {
// The pool this thread works for, and whether its current job has called done_blocking().
thread_local std::atomic<std::size_t>* finishing_count = nullptr;
thread_local bool finishing = false;
}  // namespace

void worker_pool::done_blocking() noexcept {
  if (!finishing_count || finishing) return;
  finishing = true;
  finishing_count->fetch_add(1);
}

worker_pool::worker_pool(connector connect, std::size_t threads, std::chrono::microseconds linger)
    : connect_(std::move(connect)), linger_(linger) {
  threads_.reserve(threads);
  slots_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) slots_.push_back(std::make_unique<idle_slot>());
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this, i] { run(i); });
}

bool worker_pool::post(job&& j, lane l) {
  idle_slot* hot = nullptr;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    (l == lane::maintenance ? urgent_ : queue_).push_back(std::move(j));
    queued_.fetch_add(1, std::memory_order_release);
    // Jobs up to the number of finishing workers are theirs: each re-checks the queue under this
    // lock before it goes idle.
    if (!idle_.empty() && urgent_.size() + queue_.size() > finishing_.load()) {
      hot = idle_.back();  // the most recently idle worker: warm thread, warm connection
      idle_.pop_back();
      hot->signalled = true;
    }
  }
  // After the unlock: a worker woken under the lock would at once block on it again, and wake
  // the poster when it got it (two more context switches per call on the uncontended cycle).
  if (hot) hot->wake.notify_one();
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
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return j;
}

void worker_pool::linger() const {
  if (linger_.count() <= 0) return;
  const auto until = steady_clock::now() + linger_;
  while (queued_.load(std::memory_order_acquire) == 0 && !stopping_.load() && steady_clock::now() < until)
    std::this_thread::yield();
}

void worker_pool::run(std::size_t index) {
  // One connection per worker for its whole life (the pool's maxPoolSize equals the worker count,
  // so this never blocks).
  connect_([this, index](mongoc_client_t* client) {
    finishing_count = &finishing_;
    idle_slot& slot = *slots_[index];
    std::unique_lock lock(mu_);
    for (;;) {
      if (has_work()) {
        job j = pop();
        lock.unlock();
        j(client);
        j = nullptr;  // destroy captures outside the lock
        if (finishing) linger();
        lock.lock();
        if (finishing) {
          finishing = false;
          finishing_.fetch_sub(1);
        }
        continue;
      }
      if (stopping_) return;
      slot.signalled = false;
      idle_.push_back(&slot);
      idle_waits_.fetch_add(1, std::memory_order_relaxed);
      slot.wake.wait(lock, [&] { return slot.signalled; });
    }
  });
}

}  // namespace mongolock::detail
