// Leases: renewal, loss (taken over, or renewal hanging) cancelling guarded work, release paths,
// fencing tokens across release, expiry and document removal.
#include <mongoc/mongoc.h>
#include <signal.h>

#include <filesystem>
#include <numeric>

#include "engine/access.hpp"
#include "store/client_impl.hpp"
#include "fixture.hpp"
#include "private_server.hpp"

using namespace test;
using boost::system::error_code;
namespace ml = mongolock;

namespace {

// Guarded work that would run for a minute unless cancelled.
asio::awaitable<int> long_work(std::atomic<bool>& started) {
  started = true;
  asio::steady_timer t(co_await asio::this_coro::executor, 60s);
  co_await t.async_wait(asio::deferred);
  co_return 42;
}

// Deletes a lock document directly, as the TTL monitor would.
void delete_document(const std::string& uri, const std::string& name) {
  mongoc_client_t* c = mongoc_client_new(uri.c_str());
  mongoc_collection_t* coll = mongoc_client_get_collection(c, "mongolock_test", "locks");
  bson_t filter;
  bson_init(&filter);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  bson_error_t err;
  BOOST_TEST(mongoc_collection_delete_one(coll, &filter, nullptr, nullptr, &err), err.message);
  bson_destroy(&filter);
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(c);
}

// Hands a lock document to another owner directly, as an operator's edit (or a takeover this
// holder did not see) would.
void give_document_away(const std::string& uri, const std::string& name) {
  mongoc_client_t* c = mongoc_client_new(uri.c_str());
  mongoc_collection_t* coll = mongoc_client_get_collection(c, "mongolock_test", "locks");
  bson_t filter, change, set;
  bson_init(&filter);
  bson_init(&change);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  BSON_APPEND_DOCUMENT_BEGIN(&change, "$set", &set);
  BSON_APPEND_UTF8(&set, "owner", "0123456789abcdef0123456789abcdef");
  bson_append_document_end(&change, &set);
  bson_error_t err;
  BOOST_TEST(mongoc_collection_update_one(coll, &filter, &change, nullptr, nullptr, &err), err.message);
  bson_destroy(&change);
  bson_destroy(&filter);
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(c);
}

// An io_context on one thread for tests that manage their own client; members are destroyed
// (client first) before the thread is joined.
struct threaded_io {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~threaded_io() {
    work.reset();
    thread.join();
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(lease)

BOOST_FIXTURE_TEST_CASE(renewal_keeps_lease_past_several_expiries, io_fixture) {
  auto a = make_provider(fast_options(600ms)), b = make_provider(fast_options(600ms));
  const auto name = unique("renew");
  run([&]() -> asio::awaitable<void> {
    auto held = co_await a.create_lock(name).async_acquire();
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (int i = 0; i < 8; ++i) {  // 8 x 300 ms = 4 expiries
      t.expires_after(300ms);
      co_await t.async_wait(asio::deferred);
      auto [ec, none] = co_await b.create_lock(name).async_try_acquire(asio::as_tuple(asio::deferred));
      BOOST_TEST((ec == ml::errc::busy));
    }
    BOOST_TEST(held.held());
    auto rel = co_await held.async_release(asio::as_tuple(asio::deferred));
    BOOST_TEST(!std::get<0>(rel));
  }());
  const auto s = a.snapshot();
  BOOST_TEST(s.renewals >= 8u);
  BOOST_TEST(s.losses == 0u);
  // One renewal command per tick for the one lease: each answered one is in the histogram.
  const auto commands = std::accumulate(s.renewal_histogram.begin(), s.renewal_histogram.end(), std::uint64_t{0});
  BOOST_TEST(commands >= 8u);
  BOOST_TEST(s.renewal_time.count() > 0);
}

BOOST_FIXTURE_TEST_CASE(takeover_cancels_guarded_work_and_wait_lost, io_fixture) {
  auto a = make_provider(fast_options(900ms)), admin = make_provider();
  const auto name = unique("lost");
  std::atomic<bool> started{false};
  run([&]() -> asio::awaitable<void> {
    auto held = co_await a.create_lock(name).async_acquire();
    std::optional<error_code> lost;
    held.async_wait_lost([&](error_code ec) { lost = ec; });
    std::exception_ptr guard_error;
    std::atomic<bool> guard_done{false};
    held.async_guard(long_work(started), [&](std::exception_ptr e, int) {
      guard_error = e;
      guard_done = true;
    });
    asio::steady_timer t(co_await asio::this_coro::executor, 100ms);
    co_await t.async_wait(asio::deferred);
    BOOST_TEST(started.load());
    auto [ec, owner] = co_await admin.async_force_release(name, asio::as_tuple(asio::deferred));
    BOOST_TEST(!ec);
    BOOST_TEST(owner == held.owner_id());
    const auto t0 = clock::now();
    while (!guard_done && ms_since(t0) < 3000) {
      t.expires_after(10ms);
      co_await t.async_wait(asio::deferred);
    }
    BOOST_TEST(guard_done.load());
    BOOST_TEST(ms_since(t0) < 700);  // noticed at the next renewal (every 300 ms)
    BOOST_REQUIRE(guard_error);
    try {
      std::rethrow_exception(guard_error);
    } catch (const boost::system::system_error& e) {
      BOOST_TEST((e.code() == ml::errc::lease_lost));
    }
    BOOST_TEST((lost && *lost == ml::errc::lease_lost));
    BOOST_TEST((held.status() == ml::errc::lease_lost));
    auto rel = co_await held.async_release(asio::as_tuple(asio::deferred));
    BOOST_TEST((std::get<0>(rel) == ml::errc::lease_lost));
  }());
  BOOST_TEST(a.snapshot().losses == 1u);
  BOOST_TEST(a.snapshot().losses_taken_over == 1u, "a force release is seen as another owner");
  BOOST_TEST(a.snapshot().losses_at_deadline == 0u);
}

BOOST_FIXTURE_TEST_CASE(guard_returns_work_result_while_held, io_fixture) {
  auto a = make_provider();
  run([&]() -> asio::awaitable<void> {
    auto held = co_await a.create_lock(unique("guard-ok")).async_acquire();
    auto work = []() -> asio::awaitable<int> { co_return 7; };
    BOOST_TEST(co_await held.async_guard(work()) == 7);
    co_await held.async_release();
    bool threw = false;
    try {
      co_await held.async_guard(work());
    } catch (const boost::system::system_error& e) {
      threw = e.code() == ml::errc::released;
    }
    BOOST_TEST(threw);  // no guarded work runs on a released lease
  }());
}

BOOST_AUTO_TEST_CASE(hung_renewal_loses_lease_at_local_deadline) {
  // A server of our own, frozen with SIGSTOP: renewal calls hang instead of failing.
  private_server server("hang");
  if (!server.available()) return;
  threaded_io t;
  ml::client_options co;
  co.socket_timeout = 30000ms;  // the driver would hang far longer than the lease
  ml::client db(t.io.get_executor(), server.uri, co);
  ml::provider p(db, "mongolock_test", "locks", fast_options(1000ms));
  std::atomic<bool> started{false};
  // A named lambda: the coroutine reads its captures through it while running.
  auto body = [&]() -> asio::awaitable<long long> {
    auto held = co_await p.create_lock("hang").async_acquire();
    const auto acquired = clock::now();
    server.freeze();
    try {
      co_await held.async_guard(long_work(started));
    } catch (const boost::system::system_error& e) {
      BOOST_TEST((e.code() == ml::errc::lease_lost));
    }
    co_return ms_since(acquired);
  };
  auto f = asio::co_spawn(asio::make_strand(t.io), body(), asio::use_future);
  BOOST_REQUIRE(f.wait_for(10s) == std::future_status::ready);
  const auto lost_after = f.get();
  server.thaw();
  // Deadline = last renewal sent + expiry - margin <= 900 ms after acquisition.
  BOOST_TEST(lost_after <= 950);
  BOOST_TEST(lost_after >= 500);
  BOOST_TEST(p.snapshot().losses == 1u);
  BOOST_TEST(p.snapshot().losses_at_deadline == 1u, "no renewal answered before the deadline");
  BOOST_TEST(p.snapshot().losses_taken_over == 0u);
}

BOOST_AUTO_TEST_CASE(ambiguous_take_reports_ambiguous_and_never_leaks_the_lock) {
  // The server freezes (SIGSTOP) just as a compare-and-swap is sent: the reply never comes and
  // the re-check cannot reach the server either. The write may still be applied when the server
  // resumes. The acquire rides the outage out until its bound (docs/design.md section 4), then
  // ends with timeout, saying the take's outcome is unknown; the library frees the lock once it
  // can, long before expiry.
  private_server server("amb");
  if (!server.available()) return;
  threaded_io t;
  ml::client_options co;
  co.socket_timeout = 500ms;
  co.server_selection_timeout = 1500ms;
  ml::client db(t.io.get_executor(), server.uri, co);
  ml::provider p(db, "mongolock_test", "locks", fast_options(20000ms));
  ml::provider other(db, "mongolock_test", "locks", fast_options(20000ms));
  auto body = [&]() -> asio::awaitable<void> {
    auto first = co_await p.create_lock("amb").async_acquire();
    co_await first.async_release();  // free: the next acquire takes without reading (a blind take)
    server.freeze();
    const auto t0 = clock::now();
    ml::diagnostics why;
    auto [ec, none] = co_await p.create_lock("amb").async_acquire_for(5000ms, why, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST((ec == ml::errc::timeout), ec.message());
    BOOST_TEST(why.reason.find("a take whose outcome is unknown is given back") != std::string::npos, why.reason);
    BOOST_TEST(ms_since(t0) < 8000);
    server.thaw();
    const auto resumed = clock::now();
    auto [ec2, got] = co_await other.create_lock("amb").async_acquire_for(10000ms, asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(!ec2, ec2.message());
    BOOST_TEST(ms_since(resumed) < 9000);  // freed by the library, not by the 20 s expiry
    if (got) co_await got.async_release();
  };
  auto f = asio::co_spawn(asio::make_strand(t.io), body(), asio::use_future);
  BOOST_REQUIRE(f.wait_for(30s) == std::future_status::ready);
  f.get();
}

BOOST_FIXTURE_TEST_CASE(release_after_takeover_never_frees_the_new_owner, io_fixture) {
  auto a = make_provider(fast_options(20000ms)), admin = make_provider(), b = make_provider();
  const auto name = unique("not-yours");
  run([&]() -> asio::awaitable<void> {
    auto old = co_await a.create_lock(name).async_acquire();
    co_await admin.async_force_release(name, ml::force_mode::immediate);  // the default waits 22 s
    auto now = co_await b.create_lock(name).async_acquire();
    auto [ec] = co_await old.async_release(asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::lease_lost));
    auto [ec2, info] = co_await admin.async_inspect(name, asio::as_tuple(asio::deferred));
    BOOST_TEST(info.held);
    BOOST_TEST(info.owner == now.owner_id());
    co_await now.async_release();
  }());
}

BOOST_FIXTURE_TEST_CASE(destroyed_lease_is_released_in_background, io_fixture) {
  auto a = make_provider(fast_options(20000ms)), b = make_provider();
  const auto name = unique("dtor");
  run([&]() -> asio::awaitable<void> {
    { auto dropped = co_await a.create_lock(name).async_acquire(); }
    const auto t0 = clock::now();
    auto [ec, got] = co_await b.create_lock(name).async_acquire_for(3000ms, asio::as_tuple(asio::deferred));
    BOOST_TEST(!ec);
    BOOST_TEST(ms_since(t0) < 2000);  // far below the 20 s expiry
  }());
}

// A call made after the client's workers stopped is refused by the pool and answered at once
// (the reply is taken back out of the refused job), never left hanging.
BOOST_FIXTURE_TEST_CASE(a_call_after_the_client_shut_down_is_answered_unavailable, io_fixture) {
  ml::client dead(io.get_executor(), server_uri());
  ml::provider gone(dead, "mongolock_test", "locks", fast_options(500ms));
  ml::detail::access::impl(dead)->shutdown();
  run([&]() -> asio::awaitable<void> {
    ml::diagnostics d;
    auto [ec, none] = co_await gone.create_lock(unique("after")).async_try_acquire({}, d, asio::as_tuple(asio::deferred));
    BOOST_TEST((ec == ml::errc::server_unavailable));
    BOOST_TEST(d.reason == "the mongolock client was shut down");
  }());
}

BOOST_FIXTURE_TEST_CASE(try_acquire_takes_over_a_long_silent_holder_after_verifying, io_fixture) {
  const auto name = unique("silent");
  {
    // A holder that dies without releasing: its client goes away.
    ml::client dead(io.get_executor(), server_uri());
    ml::provider gone(dead, "mongolock_test", "locks", fast_options(500ms));
    auto f = asio::co_spawn(io, gone.create_lock(name).async_acquire(asio::use_awaitable), asio::use_future);
    auto l = f.get();
    ml::detail::access::impl(dead)->shutdown();
  }
  auto b = make_provider();
  run([&]() -> asio::awaitable<void> {
    auto [busy, none] = co_await b.create_lock(name).async_try_acquire(asio::as_tuple(asio::deferred));
    BOOST_TEST((busy == ml::errc::busy));  // just died: one look says busy, at once
    asio::steady_timer t(co_await asio::this_coro::executor, 1600ms);  // > 3 x its 500 ms expiry
    co_await t.async_wait(asio::deferred);
    // A plain try still answers busy at once: confirming is opt-in.
    auto started = clock::now();
    auto [plain, nothing] = co_await b.create_lock(name).async_try_acquire(asio::as_tuple(asio::deferred));
    BOOST_TEST((plain == ml::errc::busy));
    BOOST_TEST(ms_since(started) < 400);
    const auto t0 = clock::now();
    auto [ec, got] = co_await b.create_lock(name).async_try_acquire({.confirm_silent_holder = true},
                                                                    asio::as_tuple(asio::deferred));
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(ms_since(t0) >= 500);  // it did observe the silence for a full expiry + margin
    BOOST_TEST(ms_since(t0) < 2000);
    if (got) co_await got.async_release();
  }());
}

BOOST_FIXTURE_TEST_CASE(double_release_and_release_all, io_fixture) {
  auto a = make_provider(fast_options(20000ms)), b = make_provider();
  run([&]() -> asio::awaitable<void> {
    auto one = co_await a.create_lock(unique("rel")).async_acquire();
    auto [e1] = co_await one.async_release(asio::as_tuple(asio::deferred));
    auto [e2] = co_await one.async_release(asio::as_tuple(asio::deferred));
    BOOST_TEST(!e1);
    BOOST_TEST((e2 == ml::errc::not_held));
    ml::lease empty;
    auto [e3] = co_await empty.async_release(asio::as_tuple(asio::deferred));
    BOOST_TEST((e3 == ml::errc::not_held));

    std::vector<std::string> names{unique("all"), unique("all"), unique("all")};
    std::vector<ml::lease> held;
    for (auto& n : names) held.push_back(co_await a.create_lock(n).async_acquire());
    auto [ec, freed] = co_await a.async_release_all(asio::as_tuple(asio::deferred));
    BOOST_TEST(!ec);
    BOOST_TEST(freed == 3u);
    for (auto& l : held) BOOST_TEST((l.status() == ml::errc::released));
    for (auto& n : names) {
      auto [e, l] = co_await b.create_lock(n).async_try_acquire(asio::as_tuple(asio::deferred));
      BOOST_TEST(!e);
    }
  }());
}

BOOST_FIXTURE_TEST_CASE(fencing_tokens_increase_across_release_expiry_and_removal, io_fixture) {
  const auto name = unique("fence");
  std::vector<std::int64_t> tokens;
  auto b = make_provider(fast_options(500ms));
  run([&]() -> asio::awaitable<void> {
    auto l1 = co_await b.create_lock(name).async_acquire();
    tokens.push_back(l1.fencing_token());
    co_await l1.async_release();  // release
    auto l2 = co_await b.create_lock(name).async_acquire();
    tokens.push_back(l2.fencing_token());
    co_await l2.async_release();
  }());
  {
    // A holder that dies: its client goes away without releasing (no background release can run).
    ml::client dead(io.get_executor(), server_uri());
    ml::provider gone(dead, "mongolock_test", "locks", fast_options(500ms));
    auto f = asio::co_spawn(io, gone.create_lock(name).async_acquire(asio::use_awaitable), asio::use_future);
    auto l3 = f.get();
    tokens.push_back(l3.fencing_token());
    ml::detail::access::impl(dead)->shutdown();
  }
  run([&]() -> asio::awaitable<void> {
    auto l4 = co_await b.create_lock(name).async_acquire();  // taken over after expiry
    tokens.push_back(l4.fencing_token());
    co_await l4.async_release();
  }());
  delete_document(server_uri(), name);  // what the TTL monitor does to idle documents
  run([&]() -> asio::awaitable<void> {
    auto l5 = co_await b.create_lock(name).async_acquire();
    tokens.push_back(l5.fencing_token());
    co_await l5.async_release();
  }());
  BOOST_REQUIRE(tokens.size() == 5u);
  for (std::size_t i = 1; i < tokens.size(); ++i) BOOST_TEST(tokens[i] > tokens[i - 1], "token " << i);
}

// One provider, locks with their own timing.
BOOST_AUTO_TEST_CASE(a_lock_with_its_own_expiry_writes_and_renews_with_it) {
  io_fixture f;
  auto locks = f.make_provider(ml::lock_options{});  // 30 s leases, renewed every 10 s
  auto own = locks.options();
  own.expiry = 300ms;
  auto quick = locks.create_lock(unique("own-expiry"), own);
  auto info = f.run([&]() -> asio::awaitable<ml::lock_info> {
    auto held = co_await quick.async_acquire(asio::use_awaitable);
    auto taken = co_await locks.async_inspect(quick.name(), asio::use_awaitable);
    asio::steady_timer t(co_await asio::this_coro::executor, 450ms);  // renewals every 100 ms
    co_await t.async_wait(asio::use_awaitable);
    auto seen = co_await locks.async_inspect(quick.name(), asio::use_awaitable);
    co_await held.async_release(asio::use_awaitable);
    seen.heartbeat = seen.heartbeat != taken.heartbeat;  // renewed since the take (a beat is random)
    co_return seen;
  }());
  BOOST_TEST(info.held);
  BOOST_TEST(info.expiry.count() == 300);
  BOOST_TEST(info.heartbeat == 1, "renewed: with the provider's 30 s timing it would not be yet");
  // The provider's own locks keep the provider's timing.
  auto plain = f.run([&]() -> asio::awaitable<ml::lock_info> {
    auto held = co_await locks.create_lock(unique("provider-expiry")).async_acquire(asio::use_awaitable);
    auto seen = co_await locks.async_inspect(held.name(), asio::use_awaitable);
    co_await held.async_release(asio::use_awaitable);
    co_return seen;
  }());
  BOOST_TEST(plain.expiry.count() == 30000);
}

BOOST_AUTO_TEST_CASE(a_lock_with_its_own_acquire_timeout_gives_up_then) {
  io_fixture f;
  auto locks = f.make_provider(fast_options(5000ms));  // no acquire timeout: waits forever
  const auto name = unique("own-timeout");
  auto ec = f.run([&]() -> asio::awaitable<error_code> {
    auto held = co_await locks.create_lock(name).async_acquire(asio::use_awaitable);
    const auto started = clock::now();
    auto own = locks.options();
    own.acquire_timeout = 200ms;
    auto impatient = locks.create_lock(name, own);
    auto [got, lease] = co_await impatient.async_acquire(asio::as_tuple(asio::use_awaitable));
    BOOST_TEST(ms_since(started) < 2000);
    co_await held.async_release(asio::use_awaitable);
    co_return got;
  }());
  BOOST_TEST((ec == ml::errc::timeout));
}

BOOST_AUTO_TEST_CASE(invalid_lock_options_are_refused_with_the_reason) {
  io_fixture f;
  auto o = fast_options(5000ms);
  o.renew_every = 2000ms;  // explicit: it does not follow a lock's shorter expiry
  auto locks = f.make_provider(o);
  // The provider's options with `change` applied, as a lock's own.
  auto refused = [&](auto change, const std::string& reason) {
    auto own = locks.options();
    change(own);
    try {
      locks.create_lock("timed", own);
    } catch (const boost::system::system_error& e) {
      BOOST_TEST((e.code() == ml::errc::invalid_options));
      BOOST_TEST(std::string(e.what()).find(reason) != std::string::npos, e.what());
      return true;
    }
    return false;
  };
  BOOST_TEST(refused([](ml::lock_options& o) { o.expiry = 50ms; }, "expiry must be in 100 ms..24 h"));
  BOOST_TEST(refused([](ml::lock_options& o) { o.expiry = 1500ms; }, "renew_every must be positive and below expiry"));
  BOOST_TEST(refused([](ml::lock_options& o) { o.backoff_min = 0ms; }, "backoff range"));
  BOOST_TEST(!refused([](ml::lock_options& o) { o.expiry = 6000ms; }, ""));  // renew_every 2 s + margin 0.6 s < 6 s
  // The collection's fields are the provider's (engine uniform_api_suite checks each of them).
  BOOST_TEST(refused([](ml::lock_options& o) { o.durability = ml::write_concern::acknowledged; },
                     "lock 'timed': durability must be the provider's"));
}

// The placeholder a default force release leaves is held, so never idle: the TTL index (which
// deletes documents idle longer than idle_cleanup) must not be able to remove it and let a waiter
// create it again at once, beside the old holder.
BOOST_FIXTURE_TEST_CASE(a_force_release_placeholder_is_never_idle, io_fixture) {
  auto a = make_provider(fast_options(20000ms)), admin = make_provider();
  const auto name = unique("placeholder");
  run([&]() -> asio::awaitable<void> {
    auto held = co_await a.create_lock(name).async_acquire();
    co_await held.async_release();  // free: idle_since set
    auto again = co_await a.create_lock(name).async_acquire();
    co_await admin.async_force_release(name);
  }());
  mongoc_client_t* c = mongoc_client_new(server_uri().c_str());
  mongoc_collection_t* coll = mongoc_client_get_collection(c, "mongolock_test", "locks");
  bson_t filter;
  bson_init(&filter);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll, &filter, nullptr, nullptr);
  const bson_t* doc = nullptr;
  BOOST_REQUIRE(mongoc_cursor_next(cur, &doc));
  bson_iter_t it;
  BOOST_TEST(bson_iter_init_find(&it, doc, "owner"));
  BOOST_TEST(std::string(bson_iter_utf8(&it, nullptr)) == "(force-released)");
  BOOST_TEST(!bson_iter_init_find(&it, doc, "idle_since"), "a held placeholder must not be idle");
  mongoc_cursor_destroy(cur);
  bson_destroy(&filter);
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(c);
}

// Through libmongoc on the project's server: the leases of one provider renew
// in one updateMany per tick ($or of their filters), and a document that moved on under one of
// them loses exactly that lease (the read after the short matched count tells which).
BOOST_AUTO_TEST_CASE(leases_renew_together_and_a_moved_document_loses_only_its_own) {
  io_fixture f;
  auto p = f.make_provider(fast_options(1500ms));  // renewed every 500 ms
  const auto base = unique("together");
  std::vector<ml::lease> held;
  for (int i = 0; i < 4; ++i)
    held.push_back(f.run(p.create_lock(base + std::to_string(i)).async_acquire(asio::use_awaitable)));
  auto pause = [&](std::chrono::milliseconds d) {
    f.run([d]() -> asio::awaitable<void> {
      asio::steady_timer t(co_await asio::this_coro::executor, d);
      co_await t.async_wait(asio::use_awaitable);
    }());
  };
  const auto calls0 = p.snapshot().server_calls;
  const auto renewals0 = p.snapshot().renewals;
  pause(1600ms);  // three ticks
  const auto calls = p.snapshot().server_calls - calls0;
  BOOST_TEST(p.snapshot().renewals - renewals0 >= 8u, "every lease renewed at each tick");
  BOOST_TEST(calls <= 5u, calls << " commands renewed 4 leases over 3 ticks (one per lease: 12)");

  give_document_away(server_uri(), base + "2");
  auto lost = f.run([&]() -> asio::awaitable<error_code> {
    auto [ec] = co_await held[2].async_wait_lost(asio::as_tuple(asio::use_awaitable));
    co_return ec;
  }(), 3000ms);
  BOOST_TEST((lost == ml::errc::lease_lost));
  pause(1100ms);
  for (int i : {0, 1, 3}) {
    BOOST_TEST(held[i].held(), "lease " << i << " is still held");
    auto [released] = f.run(held[i].async_release(asio::as_tuple(asio::use_awaitable)));
    BOOST_TEST(!released, released.message());
  }
}

// Through libmongoc on the project's server: a release that a parked acquire
// of the same provider waits for hands the lock over in one update (token + 1, a new owner id),
// and the new lease renews and releases like any other.
BOOST_AUTO_TEST_CASE(a_local_hand_off_is_one_command) {
  io_fixture f;
  auto p = f.make_provider(fast_options(1500ms));
  const auto name = unique("hand-off");
  auto first = f.run(p.create_lock(name).async_acquire(asio::use_awaitable));
  std::promise<std::tuple<error_code, ml::lease>> got;
  auto next = got.get_future();
  p.create_lock(name).async_acquire([&](error_code ec, ml::lease l) { got.set_value({ec, std::move(l)}); });
  f.run([]() -> asio::awaitable<void> {  // let it park
    asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
    co_await t.async_wait(asio::use_awaitable);
  }());
  const auto calls0 = p.snapshot().server_calls;
  auto [released] = f.run(first.async_release(asio::as_tuple(asio::use_awaitable)));
  BOOST_TEST(!released, released.message());
  BOOST_REQUIRE(next.wait_for(5s) == std::future_status::ready);
  auto [ec, second] = next.get();
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(p.snapshot().server_calls - calls0 == 1u, "one command from the release to the grant");
  BOOST_TEST(second.fencing_token() == first.fencing_token() + 1);
  auto seen = f.run(p.async_inspect(name, asio::use_awaitable));
  BOOST_TEST(seen.owner == second.owner_id());
  auto [again] = f.run(second.async_release(asio::as_tuple(asio::use_awaitable)));
  BOOST_TEST(!again, again.message());
  BOOST_TEST(!f.run(p.async_inspect(name, asio::use_awaitable)).held);
}

namespace {
using acquired = std::tuple<error_code, ml::lease>;
// An acquire left running; its result lands in the future.
std::future<acquired> start_acquire(ml::provider& p, const std::string& name) {
  auto done = std::make_shared<std::promise<acquired>>();
  auto f = done->get_future();
  p.create_lock(name).async_acquire([done](error_code ec, ml::lease l) { done->set_value({ec, std::move(l)}); });
  return f;
}
// Lets acquires started meanwhile read, join the line or park.
void settle(io_fixture& f, std::chrono::milliseconds d = 150ms) {
  f.run([d]() -> asio::awaitable<void> {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
  }());
}
}  // namespace

// On the real server: a release hands the lock to another process's waiter at
// the head of the line in one update, and puts its own next waiter in line in the same update;
// the lock comes back the same way. Three providers stand for three processes.
BOOST_AUTO_TEST_CASE(a_hand_off_to_another_process_is_one_command) {
  io_fixture f;
  auto setup = f.make_provider(fast_options(1500ms)), a = f.make_provider(fast_options(1500ms)),
       b = f.make_provider(fast_options(1500ms));
  const auto name = unique("line-hand-off");
  auto first = f.run(setup.create_lock(name).async_acquire(asio::use_awaitable));
  auto a_first = start_acquire(a, name);
  settle(f);
  auto b_first = start_acquire(b, name);
  settle(f);
  auto [freed] = f.run(first.async_release(asio::as_tuple(asio::use_awaitable)));
  BOOST_REQUIRE(!freed);
  BOOST_REQUIRE(a_first.wait_for(5s) == std::future_status::ready);
  auto [ec_a, held_a] = a_first.get();  // a took it, seeing b in line behind it
  BOOST_REQUIRE_MESSAGE(!ec_a, ec_a.message());
  auto a_next = start_acquire(a, name);  // parked behind held_a
  settle(f, 50ms);
  const auto a_calls = a.snapshot().server_calls;
  auto [released_a] = f.run(held_a.async_release(asio::as_tuple(asio::use_awaitable)));
  BOOST_TEST(!released_a, released_a.message());
  BOOST_TEST(a.snapshot().server_calls - a_calls == 1u, "the release is one update");
  BOOST_REQUIRE(b_first.wait_for(5s) == std::future_status::ready);
  auto [ec_b, held_b] = b_first.get();
  BOOST_REQUIRE_MESSAGE(!ec_b, ec_b.message());
  BOOST_TEST(held_b.fencing_token() == held_a.fencing_token() + 1);
  BOOST_TEST(f.run(b.async_inspect(name, asio::use_awaitable)).owner == held_b.owner_id());
  const auto b_calls = b.snapshot().server_calls;
  auto [released_b] = f.run(held_b.async_release(asio::as_tuple(asio::use_awaitable)));
  BOOST_TEST(!released_b, released_b.message());
  BOOST_TEST(b.snapshot().server_calls - b_calls == 1u, "back to a's next waiter, in line since a's release");
  BOOST_REQUIRE(a_next.wait_for(5s) == std::future_status::ready);
  auto [ec_n, held_n] = a_next.get();
  BOOST_REQUIRE_MESSAGE(!ec_n, ec_n.message());
  BOOST_TEST(held_n.fencing_token() == held_a.fencing_token() + 2);
  auto [last] = f.run(held_n.async_release(asio::as_tuple(asio::use_awaitable)));
  BOOST_TEST(!last, last.message());
  BOOST_TEST(!f.run(a.async_inspect(name, asio::use_awaitable)).held);
}

BOOST_AUTO_TEST_SUITE_END()
