// The pattern of every use_future test whose operation completes on another thread (an Asio
// system_executor, for instance): that thread stores an exception in a promise, the test thread
// reads it, and the last of the two to let go of it frees it. libstdc++ orders the two with an
// atomic reference count inside the library, which TSan does not see (libstdc++ is not
// instrumented), so under TSan this test fails unless test/tsan.supp names the free. Without a
// sanitizer it passes trivially.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(exception_handoff_suite)

BOOST_AUTO_TEST_CASE(an_exception_freed_by_the_thread_that_threw_it_is_not_a_race) {
  std::promise<int> p;
  auto f = p.get_future();
  // The other thread keeps its promise (and so a reference to the exception) until well after
  // this thread has read the exception and let go of it: the free happens over there.
  std::thread owner([p = std::move(p)]() mutable {
    p.set_exception(std::make_exception_ptr(std::runtime_error("failed over there")));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  });
  std::string what;
  try {
    f.get();
  } catch (const std::runtime_error& x) {
    what = x.what();
  }
  owner.join();
  BOOST_TEST(what == "failed over there");
}

BOOST_AUTO_TEST_SUITE_END()
