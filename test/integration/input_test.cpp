// Bad input and unreachable servers: specific error codes, readable messages, no hang, no leak.
#include <mongoc/mongoc.h>

#include "fixture.hpp"

using namespace test;
using boost::system::error_code;
namespace ml = mongolock;

namespace {

// Writes a lock document as something other than mongolock might: `fields` is extended JSON
// without the _id.
void write_raw(const std::string& name, const std::string& fields) {
  const std::string json = "{\"_id\": \"" + name + "\", " + fields + "}";
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(json.data()), -1, &err);
  BOOST_REQUIRE_MESSAGE(doc, err.message);
  mongoc_client_t* c = mongoc_client_new(server_uri().c_str());
  mongoc_collection_t* coll = mongoc_client_get_collection(c, "mongolock_test", "locks");
  const bool ok = mongoc_collection_insert_one(coll, doc, nullptr, nullptr, &err);
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(c);
  bson_destroy(doc);
  BOOST_REQUIRE_MESSAGE(ok, err.message);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(input)

// A lock document written by something else. Nothing crashes, every call
// completes, and a claimed expiry outside 100 ms..24 h is clamped: the waiter (expiry 1 s, so
// margin 100 ms) observes it for at least 100 ms + margin before it takes over, never at once.
BOOST_FIXTURE_TEST_CASE(a_hostile_lock_document_is_clamped_and_never_crashes, io_fixture) {
  auto p = make_provider(fast_options(1000ms));
  const std::string held = "\"owner\": \"stranger\", \"token\": {\"$numberLong\": \"5\"}, \"beat\": {\"$numberLong\": \"0\"}, ";
  for (const std::string expiry : {"\"expiry_ms\": -1", "\"expiry_ms\": 0", "\"expiry_ms\": \"soon\"",
                                   "\"expiry_ms\": {\"$numberLong\": \"-9223372036854775808\"}"}) {
    const auto name = unique("hostile");
    write_raw(name, held + expiry);
    const auto started = clock::now();
    auto [ec, l] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lease>> {
      co_return co_await p.create_lock(name).async_acquire_for(5s, asio::as_tuple(asio::deferred));
    }());
    const auto waited = ms_since(started);
    BOOST_TEST(!ec, expiry << ": " << ec.message());
    BOOST_TEST(waited >= 200, expiry << ": took over after " << waited << " ms");
    BOOST_TEST(l.fencing_token() > 5);
    run(l.async_release(asio::use_awaitable));
  }
  // Fields of the wrong type or missing: inspect, list and an acquire complete, with an answer
  // or an error, never a crash or a hang past the acquire's own bound.
  for (const std::string odd : {"\"owner\": 7, \"token\": \"x\"", "\"owner\": \"stranger\"", "\"token\": [1, 2]",
                                "\"owner\": {\"a\": 1}, \"expiry_ms\": 1e300, \"beat\": null"}) {
    const auto name = unique("odd");
    write_raw(name, odd);
    auto [ec, info] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lock_info>> {
      co_return co_await p.async_inspect(name, asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST(!ec, odd << ": " << ec.message());
    const auto started = clock::now();
    auto [acquire_ec, l] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lease>> {
      co_return co_await p.create_lock(name).async_acquire_for(1s, asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST(ms_since(started) < 3000, odd << ": " << acquire_ec.message());
    if (l) run(l.async_release(asio::use_awaitable));
  }
  auto [list_ec, all] = run([&]() -> asio::awaitable<std::tuple<error_code, std::vector<ml::lock_info>>> {
    co_return co_await p.async_list(asio::as_tuple(asio::deferred));
  }());
  BOOST_TEST(!list_ec);
}

BOOST_FIXTURE_TEST_CASE(invalid_lock_names, io_fixture) {
  auto p = make_provider();
  for (std::string bad : {std::string(), std::string(513, 'x'), std::string("\xFF\xFE"), std::string("a\0b", 3)}) {
    auto [ec, l] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lease>> {
      co_return co_await p.create_lock(bad).async_acquire(asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST((ec == ml::errc::invalid_name));
    BOOST_TEST(!l);
    auto [ec2, info] = run([&]() -> asio::awaitable<std::tuple<error_code, ml::lock_info>> {
      co_return co_await p.async_inspect(bad, asio::as_tuple(asio::deferred));
    }());
    BOOST_TEST((ec2 == ml::errc::invalid_name));
  }
}

BOOST_FIXTURE_TEST_CASE(invalid_collections_and_options_throw_specific_codes, io_fixture) {
  auto code_of = [&](auto make) -> error_code {
    try {
      make();
    } catch (const boost::system::system_error& e) {
      BOOST_TEST_MESSAGE("message: " << e.what());
      return e.code();
    }
    return {};
  };
  BOOST_TEST((code_of([&] { ml::provider(*db, "bad.db", "locks"); }) == ml::errc::invalid_collection));
  BOOST_TEST((code_of([&] { ml::provider(*db, "app", "system.locks"); }) == ml::errc::invalid_collection));
  BOOST_TEST((code_of([&] { ml::provider(*db, "app", ""); }) == ml::errc::invalid_collection));
  ml::lock_options cadence;
  cadence.expiry = 1000ms;
  cadence.renew_every = 1000ms;
  BOOST_TEST((code_of([&] { ml::provider(*db, "app", "locks", cadence); }) == ml::errc::invalid_options));
  ml::client_options co;
  co.worker_threads = 0;
  BOOST_TEST((code_of([&] { ml::client(io.get_executor(), server_uri(), co); }) == ml::errc::invalid_options));
}

BOOST_AUTO_TEST_CASE(malformed_uri_never_echoes_the_password) {
  asio::io_context io;
  for (const char* uri : {"mongodb://alice:hunter2@host:notaport/", "http://alice:hunter2@host/", "mongodb://"}) {
    try {
      ml::client db(io.get_executor(), uri);
      BOOST_FAIL("accepted " << uri);
    } catch (const boost::system::system_error& e) {
      BOOST_TEST((e.code() == ml::errc::invalid_uri));
      BOOST_TEST(std::string(e.what()).find("hunter2") == std::string::npos, e.what());
    }
  }
}

BOOST_AUTO_TEST_CASE(unreachable_server_fails_fast_with_server_unavailable) {
  asio::io_context io;
  std::vector<std::string> log_lines;
  std::mutex mu;
  ml::client_options co;
  co.server_selection_timeout = 300ms;
  co.log_threshold = ml::log_level::debug;  // the returned failure is logged at debug level only
  co.log = [&](ml::log_level, std::string_view line) {
    std::lock_guard g(mu);
    log_lines.emplace_back(line);
  };
  ml::client db(io.get_executor(), "mongodb://alice:hunter2@127.0.0.1:1/?authSource=admin", co);
  BOOST_TEST(db.redacted_uri().find("hunter2") == std::string::npos);
  ml::provider p(db, "app", "locks", fast_options());
  const auto t0 = clock::now();
  std::optional<error_code> got;
  p.create_lock("x").async_acquire([&](error_code ec, ml::lease) { got = ec; });
  io.run_for(10s);
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST((*got == ml::errc::server_unavailable), got->message());
  BOOST_TEST(ms_since(t0) < 3000);
  for (auto& l : log_lines) BOOST_TEST(l.find("hunter2") == std::string::npos, l);
  BOOST_TEST(!log_lines.empty());  // the failure reached the log callback too, scrubbed
}

// An acquire's failure that reaches the caller as an exception (use_awaitable, use_future,
// async_run; a lock, a semaphore, a rw_lock, a multi-lock) says why in what(): the driver's
// reason, as diagnostics has it, beside the unchanged error code. The URI's password never shows.
BOOST_AUTO_TEST_CASE(an_exception_carries_the_drivers_reason) {
  asio::io_context io;
  ml::client db(io.get_executor(), "mongodb://alice:hunter2@127.0.0.1:1/?serverSelectionTimeoutMS=300");
  ml::provider p(db, "app", "locks", fast_options());
  std::vector<std::pair<error_code, std::string>> caught;  // one per form below
  auto catching = [&](auto body) -> asio::awaitable<void> {
    try {
      co_await body();
      caught.emplace_back(error_code{}, "no exception");
    } catch (const boost::system::system_error& e) {
      caught.emplace_back(e.code(), e.what());
    }
  };
  auto l = p.create_lock("x");
  asio::co_spawn(io, catching([&]() -> asio::awaitable<void> { co_await l.async_acquire(asio::use_awaitable); }),
                 asio::detached);
  asio::co_spawn(io, catching([&]() -> asio::awaitable<void> {
                   co_await l.async_run([]() -> asio::awaitable<void> { co_return; }());
                 }),
                 asio::detached);
  // The acquires of the other primitives, the same way.
  auto sem = p.create_semaphore("s", 2);
  auto rw = p.create_rw_lock("r");
  auto both = p.create_multi_lock({"a", "b"});
  asio::co_spawn(io, catching([&]() -> asio::awaitable<void> { co_await sem.async_acquire(asio::use_awaitable); }),
                 asio::detached);
  asio::co_spawn(io, catching([&]() -> asio::awaitable<void> { auto side = rw.reader(); co_await side.async_acquire(asio::use_awaitable); }),
                 asio::detached);
  asio::co_spawn(io, catching([&]() -> asio::awaitable<void> { auto side = rw.writer(); co_await side.async_acquire(asio::use_awaitable); }),
                 asio::detached);
  asio::co_spawn(io, catching([&]() -> asio::awaitable<void> { co_await both.async_acquire(asio::use_awaitable); }),
                 asio::detached);
  std::future<ml::lease> future = l.async_acquire_for(5s, asio::use_future);
  io.run_for(10s);
  BOOST_REQUIRE(future.wait_for(0s) == std::future_status::ready);
  try {
    future.get();
    caught.emplace_back(error_code{}, "no exception");
  } catch (const boost::system::system_error& e) {
    caught.emplace_back(e.code(), e.what());
  }
  BOOST_REQUIRE(caught.size() == 7u);
  for (const auto& [code, what] : caught) {
    BOOST_TEST_MESSAGE(what);
    BOOST_TEST((code == ml::errc::server_unavailable), code.message());
    BOOST_TEST(what.find("No suitable servers") != std::string::npos, what);
    BOOST_TEST(what.find(code.message()) != std::string::npos, what);
    BOOST_TEST(what.find("hunter2") == std::string::npos, what);
  }
}

BOOST_AUTO_TEST_SUITE_END()
