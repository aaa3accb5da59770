#pragma once
// The threads that run blocking libmongoc calls. Unlike asio::thread_pool, a job goes to the
// worker that went idle MOST recently (LIFO), and each worker keeps one pooled connection for
// its whole life. Sequential work therefore stays on one hot thread and one warm connection;
// measured on the benchmark's uncontended cycle, FIFO dispatch over 4 threads ran at 600
// cycles/s and a single thread at 1,400. A job posted while a worker is on its way back from the
// last one (done_blocking) is left to that worker: waking an idle one cost a context switch per
// call (255 -> 208 us per uncontended cycle). Bursts still spread over every worker.
//
// Two lanes: lease maintenance (renew, release) is always taken before acquisition traffic, so
// thousands of waiters' reads cannot make a holder miss its renewal.
#include <mongoc/mongoc.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace mongolock::detail {

enum class lane { acquisition, maintenance };

class worker_pool {
 public:
  using job = std::function<void(mongoc_client_t*)>;
  // Runs a worker's whole life with one connection: connect(body) calls body(client) once.
  using connector = std::function<void(const std::function<void(mongoc_client_t*)>&)>;

  // After a job that called done_blocking(), its worker stays on the CPU (yielding) for up to
  // `linger` while nothing is queued, still counted as finishing: the caller's next command (the
  // release after a take, the take after a read) is then taken without a wake-up. Measured on
  // the uncontended cycle: 10.8 -> 5.6 context switches per cycle.
  static constexpr std::chrono::microseconds default_linger{200};

  worker_pool(connector connect, std::size_t threads, std::chrono::microseconds linger = default_linger);
  ~worker_pool() { join(); }
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  // False once join() has begun: the job will never run; it is left in `j` (not moved from), so
  // the caller can complete it.
  bool post(job&& j, lane l = lane::acquisition);
  // Called by a job on its worker once its blocking call is over (before it hands the result on):
  // a job posted from then on is left to this worker, which takes it within microseconds,
  // instead of waking an idle one (a wake-up costs a context switch on a busy machine).
  static void done_blocking() noexcept;
  // Runs every queued job, then stops the threads. Idempotent; never call it from a worker.
  void join();
  // How many times a worker has gone to sleep waiting for work (tests).
  std::uint64_t idle_waits() const noexcept { return idle_waits_.load(std::memory_order_relaxed); }

 private:
  struct idle_slot {
    std::condition_variable wake;
    bool signalled = false;
  };
  void run(std::size_t index);
  void linger() const;

  bool has_work() const { return !urgent_.empty() || !queue_.empty(); }
  job pop();

  connector connect_;
  std::chrono::microseconds linger_;
  std::atomic<std::uint64_t> idle_waits_{0};
  std::mutex mu_;
  std::deque<job> urgent_;  // maintenance lane
  std::deque<job> queue_;   // acquisition lane
  // One per worker, owned here (not on the worker's stack): post() signals a slot after it has
  // unlocked mu_, so the slot must outlive any worker that could exit meanwhile.
  std::vector<std::unique_ptr<idle_slot>> slots_;
  std::vector<idle_slot*> idle_;  // a stack: back() went idle last
  std::atomic<std::size_t> queued_{0};     // urgent_ + queue_, readable without the lock
  std::atomic<std::size_t> finishing_{0};  // workers past done_blocking(), not yet back for work
  std::atomic<bool> stopping_{false};  // written under mu_; read without it by linger()
  std::vector<std::thread> threads_;
};

}  // namespace mongolock::detail
