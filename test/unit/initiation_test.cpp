// Every operation's initiation object names the executor of the object it runs on, as Asio's
// token adapters expect (asio::cancel_after, Boost 1.86+, asks the initiation for it).
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>

#include "engine_harness.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace test {
// A completion token that does not start the operation: it returns the executor its initiation
// object reports, or an empty executor if it reports none.
struct executor_probe {};
}  // namespace test

template <class... Signatures>
struct boost::asio::async_result<test::executor_probe, Signatures...> {
  template <class Initiation, class... Args>
  static asio::any_io_executor initiate(Initiation&& init, test::executor_probe, Args&&...) {
    if constexpr (requires { init.get_executor(); }) return init.get_executor();
    else return {};
  }
};

BOOST_AUTO_TEST_SUITE(initiation_suite)

BOOST_AUTO_TEST_CASE(acquire_names_the_providers_executor) {
  engine e;
  const asio::any_io_executor ex = e.lock("probe").async_acquire(test::executor_probe{});
  BOOST_TEST((ex == asio::any_io_executor(e.io.get_executor())));
  const asio::any_io_executor ex2 = e.lock("probe").async_try_acquire(test::executor_probe{});
  BOOST_TEST((ex2 == asio::any_io_executor(e.io.get_executor())));
}

BOOST_AUTO_TEST_CASE(lease_operations_name_the_lease_strand) {
  engine e;
  auto [ec, held] = e.acquire("probe", 1s);
  BOOST_REQUIRE(!ec);
  const asio::any_io_executor strand(held.get_executor());
  BOOST_TEST((held.async_release(test::executor_probe{}) == strand));
  BOOST_TEST((held.async_wait_lost(test::executor_probe{}) == strand));
  auto work = []() -> asio::awaitable<void> { co_return; };
  BOOST_TEST((held.async_guard(work(), test::executor_probe{}) == strand));
  BOOST_TEST(!e.release(held));
}

BOOST_AUTO_TEST_CASE(empty_lease_operations_name_an_executor_too) {
  ml::lease empty;
  BOOST_TEST(!!empty.async_release(test::executor_probe{}));
  BOOST_TEST(!!empty.async_wait_lost(test::executor_probe{}));
}

BOOST_AUTO_TEST_SUITE_END()
