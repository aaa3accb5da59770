#include <boost/asio/io_context.hpp>
#include <mongolock.hpp>

#include <iostream>

int main() {
  boost::asio::io_context io;
  try {
    mongolock::client db(io.get_executor(), "not-a-uri");
  } catch (const boost::system::system_error& e) {
    std::cout << "consumer ok: " << e.code().message() << "\n";
    return e.code() == mongolock::errc::invalid_uri ? 0 : 1;
  }
  return 1;
}
