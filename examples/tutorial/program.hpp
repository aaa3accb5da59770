#pragma once
// What every tutorial program does around its own part (acquire.cpp, README's example, spells it
// out in full): a client and a provider on one io_context, the part run as a coroutine with its
// failure printed, then the provider shut down, which frees every lease, before the program ends.
#include <boost/asio.hpp>
#include <exception>
#include <iostream>
#include <mongolock.hpp>

namespace tutorial {

// Runs `part(provider&)` (an awaitable) against the server at argv[1], or a local one; 1 if it threw.
template <class Part>
int run(int argc, char** argv, Part part) {
  namespace asio = boost::asio;
  asio::io_context io;
  mongolock::client db{io.get_executor(), argc > 1 ? argv[1] : "mongodb://127.0.0.1:27017"};
  mongolock::provider locks{db, "app", "locks"};  // destroyed before `db`
  int status = 0;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    try {
      co_await part(locks);
    } catch (const std::exception& e) {
      std::cerr << e.what() << "\n";
      status = 1;
    }
    co_await locks.async_shutdown(asio::as_tuple(asio::use_awaitable));
  }, asio::detached);
  io.run();
  return status;
}

}  // namespace tutorial
