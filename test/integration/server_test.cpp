// The server the suite runs against, reached through the library's worker-pool plumbing.
#include "fixture.hpp"

using namespace test;

BOOST_AUTO_TEST_SUITE(server)

BOOST_FIXTURE_TEST_CASE(reports_version_through_worker_pool, io_fixture) {
  auto [ec, v] = run([this]() -> asio::awaitable<std::tuple<boost::system::error_code, mongolock::server_version>> {
    co_return co_await db->async_server_version(asio::as_tuple(asio::deferred));
  }());
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST_MESSAGE("server: " << server_kind() << " version " << v.version << " wire " << v.max_wire_version);
  BOOST_TEST(!v.version.empty());
  BOOST_TEST(v.max_wire_version >= 7);
  if (server_kind() == "jongodb")
    BOOST_TEST_MESSAGE("NOTE: jongodb is an emulator, not MongoDB: no real mongod was obtainable here");
}

BOOST_FIXTURE_TEST_CASE(acquire_round_trip_writes_the_document, io_fixture) {
  auto locks = make_provider();
  const auto name = unique("roundtrip");
  run([&]() -> asio::awaitable<void> {
    auto lease = co_await locks.create_lock(name).async_acquire();
    auto [ec, info] = co_await locks.async_inspect(name, asio::as_tuple(asio::deferred));
    BOOST_TEST(!ec);
    BOOST_TEST(info.held);
    BOOST_TEST(info.owner == lease.owner_id());
    BOOST_TEST(info.fencing_token == lease.fencing_token());
    BOOST_TEST(info.expiry.count() == 1000);
    co_await lease.async_release();
    std::tie(ec, info) = co_await locks.async_inspect(name, asio::as_tuple(asio::deferred));
    BOOST_TEST(!info.held);
  }());
}

BOOST_AUTO_TEST_SUITE_END()
