// Defect 4 (core v2): renewals queued behind waiters' reads in one FIFO, so 6,000 waiters on
// another lock made a holder lose its lease. Maintenance jobs now overtake queued acquisition
// jobs. A fake connector stands in for libmongoc (no server).
#include <boost/test/unit_test.hpp>
#include <future>
#include <mutex>
#include <vector>

#include "detail/worker_pool.hpp"

using mongolock::detail::lane;
using mongolock::detail::worker_pool;

BOOST_AUTO_TEST_CASE(maintenance_overtakes_queued_acquisition_traffic) {
  worker_pool pool([](const auto& body) { body(nullptr); }, 1);
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  std::mutex mu;
  std::vector<int> order;
  auto record = [&](int id) {
    return [&, id](mongoc_client_t*) {
      std::lock_guard g(mu);
      order.push_back(id);
    };
  };
  BOOST_REQUIRE(pool.post([opened](mongoc_client_t*) { opened.wait(); }));  // occupies the one worker
  for (int i = 0; i < 1000; ++i) BOOST_REQUIRE(pool.post(record(i)));
  BOOST_REQUIRE(pool.post(record(-1), lane::maintenance));
  gate.set_value();
  pool.join();
  BOOST_REQUIRE(order.size() == 1001u);
  BOOST_TEST(order.front() == -1);
  BOOST_TEST(order[1] == 0);  // acquisition traffic keeps its own order
  BOOST_TEST(order.back() == 999);
}
