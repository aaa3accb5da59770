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

// Boost 1.81's co_spawn relays a cancellation through memory it leaves in the caller's slot: an
// emission from outside the strand after the operation completed is posted with a pointer into
// that memory, and if the slot's signal goes away before it runs (what a parallel_group does when
// its last operation is done), it reads freed memory (the semaphore's wait on all its permits
// segfaulted on it). Asio caches two freed handler blocks per thread: two other signals are
// destroyed first so that this one's memory really goes back to the allocator, where
// AddressSanitizer sees the read (asan preset; plain co_spawn fails there, co_spawn_relayed passes).
template <class Spawn>
void emit_after_completion(Spawn spawn) {
  asio::io_context io;
  auto strand = asio::make_strand(io);
  auto sig = std::make_unique<asio::cancellation_signal>();
  bool completed = false;
  auto body = []() -> asio::awaitable<void> { co_return; };
  spawn(strand, body(), asio::bind_cancellation_slot(sig->slot(), [&](std::exception_ptr) {
    completed = true;
    asio::post(io, [&] {
      // Off the strand, which has work queued (as a busy strand does): the emission is posted to it.
      asio::post(strand, [] {});
      sig->emit(asio::cancellation_type::terminal);
      {
        asio::cancellation_signal a, b;  // fill the per-thread cache of freed handler memory
        a.slot().assign([](asio::cancellation_type) {});
        b.slot().assign([](asio::cancellation_type) {});
      }
      sig.reset();
    });
  }));
  io.run();
  BOOST_TEST(completed);
}

BOOST_AUTO_TEST_CASE(a_cancellation_emitted_after_completion_reads_no_freed_memory) {
  emit_after_completion([](auto ex, auto a, auto h) { ml::detail::co_spawn_relayed(ex, std::move(a), std::move(h)); });
}

BOOST_AUTO_TEST_SUITE_END()
