// semaphore (docs/design.md section 10) on the in-memory store: at most N holders, a permit each,
// the declaration of N, waiting on every permit at once, a dead holder's permit taken over.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <set>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;

namespace {

using result = std::tuple<error_code, ml::lease>;

ml::semaphore sem(const std::shared_ptr<ml::detail::provider_impl>& p, std::string name, int permits) {
  return ml::detail::access::make_provider(p).create_semaphore(std::move(name), permits);
}

// async_acquire_for (t), or async_try_acquire (nullopt), to completion.
result acquire(engine& e, ml::semaphore s, std::optional<std::chrono::milliseconds> t, ml::diagnostics* d = nullptr,
               asio::cancellation_slot slot = {}) {
  auto done = std::make_shared<std::promise<result>>();
  auto f = done->get_future();
  auto h = asio::bind_cancellation_slot(slot, [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); });
  ml::diagnostics ignored;
  if (t) s.async_acquire_for(*t, d ? *d : ignored, std::move(h));
  else s.async_try_acquire(d ? *d : ignored, std::move(h));
  BOOST_REQUIRE_MESSAGE(e.wait(f, 10s), "the semaphore acquire did not complete in time");
  return f.get();
}

std::size_t count_of(engine& e, op what) { return e.store->count(what); }

// Both permits of the semaphore `name` of 2, held by another provider: [0] and [1].
std::vector<ml::lease> hold_both(engine& e, const std::string& name) {
  auto theirs = sem(other_provider(e), name, 2);
  std::vector<ml::lease> held;
  for (int i = 0; i < 2; ++i) {
    auto [ec, got] = acquire(e, theirs, std::nullopt);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    held.push_back(std::move(got));
  }
  return held;
}

// A waiting acquire (timeout t, or none) started and left running.
std::future<result> start_waiting(ml::semaphore s, std::optional<std::chrono::milliseconds> t,
                                  asio::cancellation_slot slot = {}) {
  auto done = std::make_shared<std::promise<result>>();
  auto f = done->get_future();
  auto h = asio::bind_cancellation_slot(slot, [done](error_code ec, ml::lease got) { done->set_value({ec, std::move(got)}); });
  if (t) s.async_acquire_for(*t, std::move(h));
  else s.async_acquire(std::move(h));
  return f;
}

bool is_free(engine& e, const std::string& name) { return e.store->get(name).held.owner.empty(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(semaphore_suite)

BOOST_AUTO_TEST_CASE(at_most_n_permits_each_its_own_lock_and_token) {
  engine e;
  auto s = sem(e.p, "s", 3);
  std::vector<ml::lease> held;
  std::set<std::string> names;
  for (int i = 0; i < 3; ++i) {
    auto [ec, got] = acquire(e, s, std::nullopt);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    names.insert(got.name());
    BOOST_TEST(got.fencing_token() > 0);
    held.push_back(std::move(got));
  }
  BOOST_TEST((names == std::set<std::string>{"s#1", "s#2", "s#3"}));
  ml::diagnostics d;
  auto [busy, none] = acquire(e, s, std::nullopt, &d);
  BOOST_TEST((busy == ml::errc::busy), busy.message());
  BOOST_TEST(d.reason.find("all 3 permits of 's'") != std::string::npos, d.reason);
  const auto freed = held[1].name();
  const auto before = held[1].fencing_token();
  BOOST_REQUIRE(!e.release(held[1]));
  auto [ec, again] = acquire(e, s, 0ms);
  BOOST_REQUIRE(!ec);
  BOOST_TEST(again.name() == freed);
  BOOST_TEST(again.fencing_token() > before, "tokens only increase on a permit");
  BOOST_TEST(count_of(e, op::declare) == 1u, "declared once per semaphore object");
}

BOOST_AUTO_TEST_CASE(a_waiter_gets_the_first_permit_released) {
  engine e;
  auto held = hold_both(e, "w");
  auto& a = held[0];
  auto& b = held[1];
  const auto t0 = steady::now();
  auto f = start_waiting(sem(e.p, "w", 2), 3s);
  e.run_for(200ms);
  BOOST_TEST((f.wait_for(0s) == std::future_status::timeout), "no permit is free yet");
  BOOST_REQUIRE(!e.release(b));
  BOOST_REQUIRE(e.wait(f, 2s));
  auto [ec, got] = f.get();
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST(got.name() == b.name());
  BOOST_TEST(std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count() < 1000);
  BOOST_TEST(a.held(), "the other permit stays with its holder");
  e.run_for(100ms);
  for (auto n : {"w#1", "w#2"}) BOOST_TEST(e.store->get(n).line.empty(), n << ": the waiter left every line");
}

BOOST_AUTO_TEST_CASE(a_waiter_times_out_when_no_permit_comes_free) {
  engine e;
  auto held = hold_both(e, "t");
  ml::diagnostics d;
  const auto t0 = steady::now();
  auto [ec, got] = acquire(e, sem(e.p, "t", 2), 300ms, &d);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  BOOST_TEST(d.reason.find("no permit of 't' came free") != std::string::npos, d.reason);
  BOOST_TEST(took >= 300);
  BOOST_TEST(took < 1000, took << " ms");
}

// Two permits freed at once: the waiter keeps one, and only one. The take of one of them is made
// to hang (applied at once, answered 400 ms later), so the other is granted while it is in flight:
// the late grant is given back.
BOOST_AUTO_TEST_CASE(a_second_permit_granted_in_the_same_moment_is_given_back) {
  engine e;
  auto held = hold_both(e, "g");
  auto& a = held[0];
  auto& b = held[1];
  auto f = start_waiting(sem(e.p, "g", 2), 3s);
  e.run_for(150ms);
  const auto takes_before = e.store->count(op::take);
  e.store->inject(op::take, {fault::kind::hang, 400ms});
  auto ra = engine::ec_future([&](auto h) { a.async_release(h); });
  auto rb = engine::ec_future([&](auto h) { b.async_release(h); });
  BOOST_REQUIRE(e.wait(f, 2s));
  auto [ec, got] = f.get();
  BOOST_REQUIRE(!ec);
  e.run_for(800ms);
  const auto other = got.name() == "g#1" ? "g#2" : "g#1";
  BOOST_TEST(e.store->count(op::take) - takes_before == 2u, "both permits were taken");
  BOOST_TEST(!is_free(e, got.name()));
  BOOST_TEST(is_free(e, other), "only one permit stays with the waiter");
}

// A holder that died without releasing: its permit is taken over after an observed expiry,
// while the live holder of the other permit keeps it.
BOOST_AUTO_TEST_CASE(a_dead_holders_permit_is_taken_over_after_its_expiry) {
  engine e;
  auto dead = free_doc(10);
  dead.held.owner = std::string(32, 'd');
  e.store->put("k#1", dead);
  auto [ec0, live] = acquire(e, sem(other_provider(e), "k", 2), std::nullopt);
  BOOST_REQUIRE(!ec0);
  BOOST_REQUIRE(live.name() == "k#2");
  const auto t0 = steady::now();
  auto [ec, got] = acquire(e, sem(e.p, "k", 2), 5s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST(got.name() == "k#1");
  BOOST_TEST(got.fencing_token() > 10);
  BOOST_TEST(took >= 1000, "never before the dead holder's expiry: " << took << " ms");
  BOOST_TEST(took < 2500, took << " ms");
  BOOST_TEST(live.held());
}

BOOST_AUTO_TEST_CASE(cancelling_a_wait_takes_nothing_and_leaves_every_line) {
  engine e;
  auto held = hold_both(e, "c");
  auto& a = held[0];
  auto& b = held[1];
  asio::cancellation_signal cancel;
  auto f = start_waiting(sem(e.p, "c", 2), std::nullopt, cancel.slot());
  e.run_for(150ms);
  BOOST_REQUIRE(e.store->get("c#1").line.size() + e.store->get("c#2").line.size() > 0u);
  cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(f, 1s));
  BOOST_TEST((std::get<0>(f.get()) == asio::error::operation_aborted));
  BOOST_REQUIRE(!e.release(a));
  BOOST_REQUIRE(!e.release(b));
  e.run_for(200ms);
  for (auto n : {"c#1", "c#2"}) {
    BOOST_TEST(is_free(e, n), n);
    BOOST_TEST(e.store->get(n).line.empty(), n);
  }
}

// A free permit with someone in its line is theirs: a newcomer that waits leaves it to them
// (here a waiter that never comes: the permit stays free until its head's window is over). A try
// does not queue and takes it, as a lock's try does, so a waiter that crashed while in line
// cannot keep tries out.
BOOST_AUTO_TEST_CASE(a_newcomer_does_not_overtake_a_permits_line) {
  engine e;
  auto queued = free_doc(5);
  queued.line = {ml::detail::line_entry{std::string(32, 'a'), 1}};
  queued.waiting = 1;
  queued.tickets = 2;
  e.store->put("q#1", queued);
  auto [ec, got] = acquire(e, sem(e.p, "q", 1), 300ms);
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  BOOST_TEST(is_free(e, "q#1"));
  auto [ec_try, tried] = acquire(e, sem(other_provider(e), "q", 1), std::nullopt);
  BOOST_TEST(!ec_try, ec_try.message());
  BOOST_TEST(tried.name() == "q#1");
}

BOOST_AUTO_TEST_CASE(a_different_number_of_permits_is_a_declaration_mismatch) {
  engine e;
  auto [ec0, first] = acquire(e, sem(e.p, "m", 3), std::nullopt);
  BOOST_REQUIRE(!ec0);
  ml::diagnostics d;
  auto [ec, got] = acquire(e, sem(other_provider(e), "m", 4), 1s, &d);
  BOOST_TEST((ec == ml::errc::declaration_mismatch), ec.message());
  BOOST_TEST(d.reason == "'m' is declared as a semaphore of 3 permits, not a semaphore of 4");
  BOOST_TEST(!got);
  std::size_t takes = 0;
  for (auto& c : e.store->calls()) takes += c.what == op::take;
  BOOST_TEST(takes == 1u, "only the first semaphore's take");
}

// The declaration is a server call like any other: the acquire timeout bounds it.
BOOST_AUTO_TEST_CASE(a_hanging_declaration_ends_at_the_acquire_timeout) {
  engine e;
  e.store->inject(op::declare, {fault::kind::hang, 3s});
  ml::diagnostics d;
  const auto t0 = steady::now();
  auto [ec, got] = acquire(e, sem(e.p, "h", 2), 300ms, &d);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  BOOST_TEST(d.reason.find("declaring 'h'") != std::string::npos, d.reason);
  BOOST_TEST(took < 1000, took << " ms");
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_before_any_server_call) {
  engine e;
  struct bad {
    std::string name;
    int permits;
    std::chrono::milliseconds timeout;
    ml::errc expected;
    std::string says;
  };
  const std::vector<bad> cases{
      {"b", 0, 1s, ml::errc::invalid_options, "1..64 permits, not 0"},
      {"b", -2, 1s, ml::errc::invalid_options, "not -2"},
      {"b", 65, 1s, ml::errc::invalid_options, "not 65"},
      {"", 2, 1s, ml::errc::invalid_name, ""},
      {std::string(510, 'x'), 12, 1s, ml::errc::invalid_name, "permit names"},
      {"b", 2, -1ms, ml::errc::invalid_options, "negative"},
  };
  for (const auto& c : cases) {
    ml::diagnostics d;
    auto [ec, got] = acquire(e, sem(e.p, c.name, c.permits), c.timeout, &d);
    BOOST_TEST((ec == c.expected), ec.message() << " for " << c.says);
    BOOST_TEST(d.reason.find(c.says) != std::string::npos, d.reason);
    BOOST_TEST(!got);
  }
  BOOST_TEST(e.store->calls().empty());
}

// Holders in two providers contend for 2 permits: never more than 2 inside at once, all finish.
BOOST_AUTO_TEST_CASE(contending_holders_never_exceed_the_permits) {
  engine e;
  auto other = other_provider(e);
  const int rounds = 10, workers = 5;
  int inside = 0, most = 0, finished = 0;
  auto loop = [&](std::shared_ptr<ml::detail::provider_impl> p) -> asio::awaitable<void> {
    auto s = sem(p, "n", 2);
    for (int i = 0; i < rounds; ++i) {
      auto held = co_await s.async_acquire_for(10s, asio::use_awaitable);
      most = std::max(most, ++inside);
      auto ex = co_await asio::this_coro::executor;
      asio::steady_timer t(ex, 3ms);
      co_await t.async_wait(asio::use_awaitable);
      --inside;
      co_await held.async_release(asio::use_awaitable);
    }
    ++finished;
  };
  for (int w = 0; w < workers; ++w) asio::co_spawn(e.io, loop(w % 2 ? other : e.p), asio::detached);
  const auto end = steady::now() + 30s;
  while (finished < workers && steady::now() < end) e.run_one();
  BOOST_TEST(finished == workers);
  BOOST_TEST(most == 2);
}

BOOST_AUTO_TEST_SUITE_END()
