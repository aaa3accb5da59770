// The public lease handle without a server: what an empty lease (as as_tuple hands out on
// errc::busy) answers. Its accessors dereferenced null.
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include "mongolock/lease.hpp"

namespace ml = mongolock;

BOOST_AUTO_TEST_SUITE(lease_api)

BOOST_AUTO_TEST_CASE(empty_lease_accessors_are_defined) {
  const ml::lease empty;
  BOOST_TEST(!empty);
  BOOST_TEST(!empty.held());
  BOOST_TEST((empty.status() == ml::errc::not_held));
  BOOST_TEST(empty.name().empty());
  BOOST_TEST(empty.owner_id().empty());
  BOOST_TEST(empty.fencing_token() == 0);
  BOOST_CHECK_THROW(empty.get_executor(), boost::system::system_error);
}

BOOST_AUTO_TEST_CASE(empty_lease_operations_complete_with_not_held) {
  boost::asio::io_context io;
  ml::lease empty;
  boost::system::error_code released, waited;
  empty.async_release(boost::asio::bind_executor(io, [&](boost::system::error_code ec) { released = ec; }));
  empty.async_wait_lost(boost::asio::bind_executor(io, [&](boost::system::error_code ec) { waited = ec; }));
  BOOST_TEST(!released);  // never completes inline
  io.run();
  BOOST_TEST((released == ml::errc::not_held));
  BOOST_TEST((waited == ml::errc::not_held));
}

BOOST_AUTO_TEST_SUITE_END()
