// Compile-time checks of the public API's misuse messages (ctest api_misuse.*): each CASE must
// fail to compile with a message that names the right operation; CASE 0 compiles (the file is
// sound, so the failures are the misuse and nothing else).
#include <chrono>
#include <mongolock.hpp>

using namespace std::chrono_literals;

boost::asio::awaitable<void> misuse(mongolock::lock l, mongolock::semaphore s, mongolock::rw_lock r,
                                    mongolock::multi_lock m, mongolock::election el, mongolock::leadership& lead) {
#if CASE == 1
  co_await l.async_acquire(5s);
#elif CASE == 2
  co_await l.async_try_acquire(2s);
#elif CASE == 3
  co_await s.async_acquire(5s);  // the same message from every class: one set (acquire_surface.hpp)
#elif CASE == 4
  co_await r.writer().async_try_acquire(2s);
#elif CASE == 5
  co_await el.candidate("v").async_acquire(5s);
#else
  co_await l.async_acquire_for(5s);
  co_await l.async_try_acquire({.within = 2s});
  co_await s.async_acquire_for(5s);
  // Every primitive's try takes try_options, and a diagnostics& is never taken for the token.
  mongolock::diagnostics d;
  co_await s.async_try_acquire({.within = 2s}, d);
  co_await l.async_try_acquire(d);
  co_await r.reader().async_try_acquire({.confirm_silent_holder = true});
  auto w = co_await r.writer().async_try_acquire({.within = 2s}, d);
  co_await w.async_release(d);
  co_await m.async_try_acquire({.within = 2s}, d);
  auto won = co_await el.candidate("v").async_try_acquire({.within = 2s}, d);
  co_await el.candidate("v").async_acquire_for(5s, d);
  co_await el.async_leader(d);
  co_await el.observe().async_next(d);
  co_await lead.async_proclaim("v", d);
  co_await lead.async_resign(d);
#endif
}

int main() {}
