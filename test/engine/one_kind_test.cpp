// A name is one kind of thing (docs/design.md section 10): a semaphore or rw_lock NAME keeps its
// permits in NAME#k and its declaration in NAME itself, the plain lock's document. A plain lock's
// take never matches a declaration (its filter requires no kind), and a declaration never
// replaces a lock's document: whichever comes first owns the name.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;

namespace {

using result = std::tuple<error_code, ml::lease>;
using provider_ptr = std::shared_ptr<ml::detail::provider_impl>;

// A lock as provider::create_lock makes it: declared a lock's.
ml::lock plain(const provider_ptr& p, std::string name) { return ml::detail::access::make_lock(p, std::move(name), nullptr, true); }

template <class Start>
result run(engine& e, Start start) {
  auto done = std::make_shared<std::promise<result>>();
  auto f = done->get_future();
  start([done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); });
  BOOST_REQUIRE_MESSAGE(e.wait(f, 5s), "the acquire did not complete in time");
  return f.get();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(one_kind_per_name_suite)

BOOST_AUTO_TEST_CASE(a_plain_lock_refuses_a_semaphores_or_rw_locks_name) {
  engine e;
  auto sem = ml::detail::access::make_provider(other_provider(e)).create_semaphore("mixed", 2);
  auto [ec, permit] = run(e, [&](auto h) { sem.async_acquire_for(1s, h); });
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  ml::diagnostics d;
  auto l = plain(e.p, "mixed");
  auto [ec_wait, held] = run(e, [&](auto h) { l.async_acquire_for(1s, d, h); });
  BOOST_TEST((ec_wait == ml::errc::declaration_mismatch), ec_wait.message());
  BOOST_TEST(d.reason == "'mixed' is declared as a semaphore of 2 permits, not a lock");
  auto [ec_try, tried] = run(e, [&](auto h) { l.async_try_acquire(h); });
  BOOST_TEST((ec_try == ml::errc::declaration_mismatch), ec_try.message());
  BOOST_TEST(e.store->get("mixed").declared != nullptr, "the declaration stands: no take matched it");

  auto rw = ml::detail::access::make_provider(other_provider(e)).create_rw_lock("shared", {});
  auto [ec_r, reader] = run(e, [&](auto h) { rw.reader().async_acquire_for(1s, h); });
  BOOST_REQUIRE_MESSAGE(!ec_r, ec_r.message());
  auto [ec_l, none] = run(e, [&](auto h) { plain(e.p, "shared").async_acquire_for(1s, h); });
  BOOST_TEST((ec_l == ml::errc::declaration_mismatch), ec_l.message());
}

BOOST_AUTO_TEST_CASE(a_semaphore_or_rw_lock_refuses_a_plain_locks_name) {
  engine e;
  auto [ec, held] = run(e, [&](auto h) { plain(other_provider(e), "mixed").async_acquire_for(1s, h); });
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  auto p = ml::detail::access::make_provider(e.p);
  ml::diagnostics d;
  auto sem = p.create_semaphore("mixed", 2);
  auto [ec_s, permit] = run(e, [&](auto h) { sem.async_acquire_for(1s, d, h); });
  BOOST_TEST((ec_s == ml::errc::declaration_mismatch), ec_s.message());
  BOOST_TEST(d.reason == "'mixed' is declared as a lock, not a semaphore of 2");
  auto rw = p.create_rw_lock("mixed", {});
  auto done = std::make_shared<std::promise<error_code>>();
  auto f = done->get_future();
  rw.writer().async_acquire_for(1s, [done](error_code ec, ml::multi_lease) { done->set_value(ec); });
  BOOST_REQUIRE(e.wait(f, 5s));
  const auto ec_w = f.get();
  BOOST_TEST((ec_w == ml::errc::declaration_mismatch), ec_w.message());
  BOOST_TEST(e.store->count(op::take) == 1u, "only the plain lock was taken");
}

// A plain lock declares nothing: its document is the whole of it (one document per name). A
// semaphore declares once per object; its permits declare nothing of their own.
BOOST_AUTO_TEST_CASE(a_plain_lock_declares_nothing_and_a_semaphore_once) {
  engine e;
  auto l = plain(e.p, "once");
  for (int i = 0; i < 3; ++i) {
    auto [ec, held] = run(e, [&](auto h) { l.async_acquire_for(1s, h); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_TEST(!e.release(held));
  }
  BOOST_TEST(e.store->count(op::declare) == 0u);
  auto sem = ml::detail::access::make_provider(e.p).create_semaphore("sem", 3);
  for (int i = 0; i < 2; ++i) {
    auto [ec, permit] = run(e, [&](auto h) { sem.async_acquire_for(1s, h); });
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    BOOST_TEST(!e.release(permit));
  }
  BOOST_TEST(e.store->count(op::declare) == 1u, "the semaphore's own declaration, once");
}

// '#' names the permits of a semaphore or rw_lock (NAME#k, NAME#w): a lock, semaphore, rw_lock,
// election or multi-lock member named so would share their documents undeclared (an election on
// NAME#w would block every writer of NAME). Such a name is refused before any server call.
BOOST_AUTO_TEST_CASE(a_name_with_a_hash_is_refused_as_the_permits_own) {
  engine e;
  auto p = ml::detail::access::make_provider(e.p);
  ml::diagnostics d;
  auto [ec_l, l] = run(e, [&](auto h) { plain(e.p, "shared#w").async_acquire_for(1s, d, h); });
  BOOST_TEST((ec_l == ml::errc::invalid_name), ec_l.message());
  BOOST_TEST(d.reason == "lock name contains '#', which names the permits of a semaphore or rw_lock");
  auto [ec_t, t] = run(e, [&](auto h) { plain(e.p, "shared#1").async_try_acquire(h); });
  BOOST_TEST((ec_t == ml::errc::invalid_name), ec_t.message());
  auto [ec_s, s] = run(e, [&](auto h) { p.create_semaphore("a#1", 2).async_acquire_for(1s, h); });
  BOOST_TEST((ec_s == ml::errc::invalid_name), ec_s.message());
  auto done = std::make_shared<std::promise<error_code>>();
  auto f = done->get_future();
  p.create_multi_lock({"ok", "b#2"}).async_acquire_for(1s, [done](error_code ec, ml::multi_lease) { done->set_value(ec); });
  BOOST_REQUIRE(e.wait(f, 5s));
  const auto ec_m = f.get();
  BOOST_TEST((ec_m == ml::errc::invalid_name), ec_m.message());
  BOOST_TEST(e.store->count(op::take) == 0u);
  std::string why;
  BOOST_TEST((ml::validate_lock_name("x#w", &why) == ml::errc::invalid_name));
  // A permit's own document stays readable (status, list) and its acquire is the semaphore's.
  auto sem = p.create_semaphore("c", 2);
  auto [ec_ok, permit] = run(e, [&](auto h) { sem.async_acquire_for(1s, h); });
  BOOST_TEST(!ec_ok, ec_ok.message());
}

BOOST_AUTO_TEST_SUITE_END()
