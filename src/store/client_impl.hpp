#pragma once
// State shared by a client and everything created from it. Leases may outlive the client
// object; after shutdown() they get errc::server_unavailable instead of touching freed threads.
#include <boost/asio/any_io_executor.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <string_view>

#include "store/bson_util.hpp"
#include "store/driver.hpp"
#include "store/worker_pool.hpp"
#include "mongolock/error.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

struct client_impl {
  client_impl(boost::asio::any_io_executor e, client_options o, std::unique_ptr<driver> d)
      : ex(std::move(e)),
        opts(std::move(o)),
        db(std::move(d)),
        workers(
            [db = db.get()](const auto& body) {
              // The worker's collection handles live as long as it holds its connection.
              db->with_client([&](mongoc_client_t* c) {
                collection_cache handles(c);
                body(c);
              });
            },
            opts.worker_threads) {}

  // `text()` builds the line only if someone listens at that level.
  template <class Text>
  void log(log_level level, Text&& text) const {
    if (opts.log && level >= opts.log_threshold) opts.log(level, std::forward<Text>(text)());
  }
  // Waits for in-flight driver calls (each bounded by the socket timeout), then refuses new ones.
  void shutdown() {
    stopped = true;
    workers.join();
  }

  boost::asio::any_io_executor ex;
  client_options opts;
  std::unique_ptr<driver> db;
  worker_pool workers;  // declared after db: destroyed (joined) before the driver
  std::atomic<bool> stopped{false};

  // Runs fn(mongoc_client_t*) on a worker and hands its result (an outcome) to `reply`; answers
  // server_unavailable at once if the client was shut down (the job would never run).
  template <class R, class Fn>
  void run(lane l, std::function<void(R)> reply, Fn fn) {
    worker_pool::job j = offloaded<R, Fn>{std::move(reply), std::move(fn)};
    if (workers.post(std::move(j), l)) return;
    R down{};  // not taken: the job, and with it the reply, is still ours
    down.ec = make_error_code(errc::server_unavailable);
    down.message = "the mongolock client was shut down";
    j.target<offloaded<R, Fn>>()->reply(std::move(down));
  }

 private:
  // A named type, not a lambda, so that run() can reach the reply of a job the pool refused.
  template <class R, class Fn>
  struct offloaded {
    std::function<void(R)> reply;
    Fn fn;
    void operator()(mongoc_client_t* c) {
      auto result = fn(c);
      worker_pool::done_blocking();
      reply(std::move(result));
    }
  };
};

}  // namespace mongolock::detail
