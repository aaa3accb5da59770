// Every command within the server's limits (docs/design.md section 14, "Every command within the
// server's limits"), at the real limit, on the real driver and the test server: a release of
// 30,000 leases of 512-byte names is one statement of about 17 MB, over maxBsonObjectSize (16
// MiB). Whole, it is refused and frees nothing; through splitting_store, over the store the
// provider uses, it goes in parts that the server takes, and frees what they name.
#include <mongoc/mongoc.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "engine/access.hpp"
#include "engine/splitting_store.hpp"
#include "fixture.hpp"
#include "store/mongo_commands.hpp"
#include "store/mongo_store.hpp"

namespace {

namespace md = mongolock::detail;

// A store call's reply, waited for (the mongo store answers from its worker threads).
template <class T, class Start>
T answer_of(Start start) {
  auto done = std::make_shared<std::promise<T>>();
  auto f = done->get_future();
  start([done](T v) { done->set_value(std::move(v)); });
  BOOST_REQUIRE_MESSAGE(f.wait_for(std::chrono::seconds(120)) == std::future_status::ready, "no reply in 120 s");
  return f.get();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(command_limits)

BOOST_FIXTURE_TEST_CASE(a_release_of_30000_longest_names_goes_in_parts_the_server_takes, test::io_fixture) {
  md::store_config cfg;
  cfg.database = "mongolock_test";
  cfg.collection = test::unique("limits");
  auto raw = std::make_shared<md::mongo_store>(md::access::impl(*db), cfg);
  std::vector<std::string> names, owners;
  for (int i = 0; i < 30000; ++i) {
    names.push_back(std::to_string(i) + "-");
    names.back().resize(mongolock::limits::max_name_bytes, 'n');
    owners.push_back(std::to_string(i) + "-");
    owners.back().resize(32, 'o');
  }
  // Two of them held, the first and the last.
  for (const auto i : {std::size_t{0}, names.size() - 1}) {
    md::take_request t;
    t.name = names[i];
    t.owner = owners[i];
    t.token = 5;
    t.expiry = std::chrono::milliseconds{60000};
    BOOST_REQUIRE(answer_of<md::outcome<bool>>([&](auto r) { raw->take(t, r); }).value);
  }
  const auto held = [&](std::size_t i) {
    return !answer_of<md::outcome<md::lock_doc>>([&](auto r) { raw->read(names[i], md::read_mode::majority, r); })
                .value.held.owner.empty();
  };

  const auto whole = answer_of<md::outcome<std::int64_t>>([&](auto r) { raw->release_owners(names, owners, r); });
  BOOST_TEST((whole.ec == mongolock::errc::server_error), whole.ec.message() << ": " << whole.message);
  BOOST_TEST(held(0));
  BOOST_TEST(held(names.size() - 1));

  md::splitting_store split(raw);
  const auto info = answer_of<md::outcome<md::server_info>>([&](auto r) { split.prepare(r); });
  BOOST_REQUIRE(!info.ec);
  BOOST_TEST(info.value.max_bson_bytes == md::default_max_bson_bytes);  // hello's, or 16 MiB if it says none
  const auto parts = answer_of<md::outcome<std::int64_t>>([&](auto r) { split.release_owners(names, owners, r); });
  BOOST_TEST(!parts.ec, parts.ec.message() << ": " << parts.message);
  BOOST_TEST(parts.value == 2);
  BOOST_TEST(split.extra_commands() == 1u);  // two parts
  BOOST_TEST(!held(0));
  BOOST_TEST(!held(names.size() - 1));
}

BOOST_AUTO_TEST_SUITE_END()
