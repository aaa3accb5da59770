#pragma once
// The threads that run blocking libmongoc calls. Unlike asio::thread_pool, a job goes to the
// worker that went idle MOST recently (LIFO), and each worker keeps one pooled connection for
// its whole life. Sequential work therefore stays on one hot thread and one warm connection;
// measured on the benchmark's uncontended cycle, FIFO dispatch over 4 threads ran at 600
// cycles/s and a single thread at 1,400. Bursts still spread over every worker.
#include <mongoc/mongoc.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mongolock::detail {

class driver;

class worker_pool {
 public:
  using job = std::function<void(mongoc_client_t*)>;

  worker_pool(driver& db, std::size_t threads);
  ~worker_pool() { join(); }
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;

  // False once join() has begun: the job will never run and the caller must complete itself.
  bool post(job j);
  // Runs every queued job, then stops the threads. Idempotent; never call it from a worker.
  void join();

 private:
  struct idle_slot {
    std::condition_variable wake;
    bool signalled = false;
  };
  void run(std::size_t index);

  driver& db_;
  std::mutex mu_;
  std::deque<job> queue_;
  std::vector<idle_slot*> idle_;  // a stack: back() went idle last
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace mongolock::detail
