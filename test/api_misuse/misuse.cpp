// Compile-time checks of the public API's misuse messages (ctest api_misuse.*): each CASE must
// fail to compile with a message that names the right operation; CASE 0 compiles (the file is
// sound, so the failures are the misuse and nothing else).
#include <chrono>
#include <mongolock.hpp>

using namespace std::chrono_literals;

boost::asio::awaitable<void> misuse(mongolock::lock l, mongolock::semaphore s) {
#if CASE == 1
  co_await l.async_acquire(5s);
#elif CASE == 2
  co_await l.async_try_acquire(2s);
#elif CASE == 3
  co_await s.async_acquire(5s);
#else
  co_await l.async_acquire_for(5s);
  co_await l.async_try_acquire({.within = 2s});
  co_await s.async_acquire_for(5s);
#endif
}

int main() {}
