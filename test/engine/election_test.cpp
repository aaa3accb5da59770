// Leader election (docs/design.md section 9) on the in-memory store: campaign, proclaim, observe,
// resign, and a leader that loses its lease learning it before another can win.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"
#include "mongolock/election.hpp"

using namespace test;

namespace {

using campaign_result = std::tuple<error_code, ml::leadership>;
using leader_result = std::tuple<error_code, ml::leader_info>;

ml::election election_of(const std::shared_ptr<ml::detail::provider_impl>& p, std::string name) {
  return ml::detail::access::make_provider(p).create_election(std::move(name));
}

// Starts a campaign; its result lands in the returned future.
std::future<campaign_result> start_campaign(ml::election el, std::string value,
                                            std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                                            ml::diagnostics* d = nullptr) {
  auto done = std::make_shared<std::promise<campaign_result>>();
  auto h = [done](error_code ec, ml::leadership l) { done->set_value({ec, std::move(l)}); };
  static ml::diagnostics ignored;
  if (timeout) el.candidate(std::move(value)).async_acquire_for(*timeout, std::move(h));
  else el.candidate(std::move(value)).async_acquire(d ? *d : ignored, std::move(h));
  return done->get_future();
}

campaign_result campaign(engine& e, ml::election el, std::string value, ml::diagnostics* d = nullptr) {
  auto f = start_campaign(std::move(el), std::move(value), std::nullopt, d);
  BOOST_REQUIRE_MESSAGE(e.wait(f, 5s), "the campaign did not complete in time");
  return f.get();
}

ml::leader_info leader(engine& e, ml::election el) {
  auto done = std::make_shared<std::promise<leader_result>>();
  auto f = done->get_future();
  el.async_leader([done](error_code ec, ml::leader_info l) { done->set_value({ec, std::move(l)}); });
  BOOST_REQUIRE(e.wait(f, 2s));
  auto [ec, info] = f.get();
  BOOST_REQUIRE(!ec);
  return info;
}

std::future<leader_result> next_of(ml::election::observer& o, asio::cancellation_slot slot = {}) {
  auto done = std::make_shared<std::promise<leader_result>>();
  o.async_next(asio::bind_cancellation_slot(slot, [done](error_code ec, ml::leader_info l) {
    done->set_value({ec, std::move(l)});
  }));
  return done->get_future();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(election_suite)

BOOST_AUTO_TEST_CASE(a_campaign_makes_a_leader_observers_see) {
  engine e;
  auto el = election_of(e.p, "svc");
  auto [ec, lead] = campaign(e, el, "10.0.0.1:8080");
  BOOST_REQUIRE(!ec);
  BOOST_TEST(lead.held());
  BOOST_TEST(lead.value() == "10.0.0.1:8080");
  BOOST_TEST(lead.term() == lead.get_lease().fencing_token());
  const auto seen = leader(e, el);
  BOOST_TEST(seen.has_leader);
  BOOST_TEST(seen.value == "10.0.0.1:8080");
  BOOST_TEST(seen.term == lead.term());
  BOOST_TEST(seen.owner == lead.get_lease().owner_id());
  auto proclaimed = engine::ec_future([&, &lead = lead](auto h) { lead.async_proclaim("10.0.0.1:9090", h); });
  BOOST_REQUIRE(e.wait(proclaimed, 2s));
  BOOST_TEST(!proclaimed.get());
  BOOST_TEST(lead.value() == "10.0.0.1:9090");
  BOOST_TEST(leader(e, el).value == "10.0.0.1:9090");
  BOOST_TEST(leader(e, el).term == lead.term(), "a proclaim keeps the term");
  auto resigned = engine::ec_future([&, &lead = lead](auto h) { lead.async_resign(h); });
  BOOST_REQUIRE(e.wait(resigned, 2s));
  BOOST_TEST(!resigned.get());
  BOOST_TEST(!leader(e, el).has_leader);
  auto late = engine::ec_future([&, &lead = lead](auto h) { lead.async_proclaim("x", h); });
  BOOST_REQUIRE(e.wait(late, 2s));
  BOOST_TEST((late.get() == ml::errc::released));
}

// The observer reports the first state at once, then each change: leaders in rising terms.
BOOST_AUTO_TEST_CASE(an_observer_sees_each_leader_in_rising_terms) {
  engine e;
  auto second = other_provider(e);
  auto el = election_of(e.p, "obs");
  auto observer = el.observe(10ms);
  auto first = next_of(observer);
  BOOST_REQUIRE(e.wait(first, 2s));
  BOOST_TEST(!std::get<1>(first.get()).has_leader);
  auto [ec, a] = campaign(e, el, "a");
  BOOST_REQUIRE(!ec);
  auto b_wins = start_campaign(election_of(second, "obs"), "b");
  std::vector<ml::leader_info> seen;
  for (int i = 0; i < 3 && (seen.empty() || seen.back().value != "b"); ++i) {
    auto next = next_of(observer);
    BOOST_REQUIRE(e.wait(next, 3s));
    seen.push_back(std::get<1>(next.get()));
    if (seen.back().value == "a") {
      auto resigned = engine::ec_future([&, &a = a](auto h) { a.async_resign(h); });
      BOOST_REQUIRE(e.wait(resigned, 2s));
    }
  }
  BOOST_REQUIRE(e.wait(b_wins, 3s));
  auto [ec_b, b] = b_wins.get();
  BOOST_REQUIRE(!ec_b);
  BOOST_REQUIRE(!seen.empty());
  BOOST_TEST(seen.front().value == "a");
  BOOST_TEST(seen.back().value == "b");
  BOOST_TEST(seen.back().term == b.term());
  BOOST_TEST(b.term() > a.term());
  std::int64_t term = 0;
  for (auto& s : seen)
    if (s.has_leader) {
      BOOST_TEST(s.term > term);
      term = s.term;
    }
}

// Between a campaign's take and its proclaim the document names a holder without a value: no
// observer may see the previous leader's value under the new term.
BOOST_AUTO_TEST_CASE(a_new_term_never_shows_the_previous_leaders_value) {
  engine e;
  // b's take is answered 2 s late (room for a stalled run to look in between); b's leases last
  // 5 s so that this reply is still a grant (a reply after sent + E - m is not: docs/design.md
  // section 4).
  auto second = other_provider(e, fast(5000ms));
  auto el = election_of(e.p, "val");
  auto [ec, a] = campaign(e, el, "old");
  BOOST_REQUIRE(!ec);
  e.store->inject(op::take, {fault::kind::hang, 2000ms});  // b's take: applied now, answered later
  auto b_wins = start_campaign(election_of(second, "val"), "new");
  auto resigned = engine::ec_future([&, &a = a](auto h) { a.async_resign(h); });
  BOOST_REQUIRE(e.wait(resigned, 2s));
  // b's take is in (the new term is in the document); it cannot proclaim before the reply.
  BOOST_REQUIRE(run_until(e, [&, &a = a] { return e.store->get("val").held.token > a.term(); }, 2s));
  auto mid = leader(e, el);
  BOOST_TEST(!mid.has_leader, "term " << mid.term << " shows '" << mid.value << "'");
  BOOST_REQUIRE(e.wait(b_wins, 5s));
  BOOST_TEST(leader(e, el).value == "new");
}

// A campaign whose proclaim fails does not lead silently: the lock is given back.
BOOST_AUTO_TEST_CASE(a_campaign_that_cannot_proclaim_gives_the_lock_back) {
  engine e;
  e.store->inject(op::proclaim, {fault::kind::stream_error_before});
  ml::diagnostics d;
  auto [ec, lead] = campaign(e, election_of(e.p, "fails"), "v", &d);
  BOOST_TEST((ec == ml::errc::server_unavailable), ec.message());
  BOOST_TEST(!lead);
  BOOST_TEST(!d.reason.empty());
  e.run_for(50ms);
  BOOST_TEST(e.store->get("fails").held.owner.empty(), "released");
}

BOOST_AUTO_TEST_CASE(bad_values_are_refused_before_any_server_call) {
  engine e;
  for (const std::string& v : {std::string(), std::string(ml::limits::max_election_value + 1, 'v'), std::string("\xc3\x28")}) {
    ml::diagnostics d;
    auto [ec, lead] = campaign(e, election_of(e.p, "bad"), v, &d);
    BOOST_TEST((ec == ml::errc::invalid_options), ec.message());
    BOOST_TEST(d.reason.find("election value") != std::string::npos, d.reason);
  }
  for (auto& c : e.store->calls()) BOOST_TEST((c.what != op::take), "a take for " << c.name);
  auto [ec, lead] = campaign(e, election_of(e.p, "bad"), "ok");
  BOOST_REQUIRE(!ec);
  auto refused = engine::ec_future([&, &lead = lead](auto h) { lead.async_proclaim(std::string(5000, 'x'), h); });
  BOOST_REQUIRE(e.wait(refused, 2s));
  BOOST_TEST((refused.get() == ml::errc::invalid_options));
  BOOST_TEST(lead.value() == "ok");
}

// etcd's promise: a leader whose lease runs out knows before anyone else can win.
BOOST_AUTO_TEST_CASE(a_leader_that_loses_its_lease_learns_it_before_another_wins) {
  engine e(fast(600ms));
  auto second = other_provider(e, fast(600ms));
  auto [ec, a] = campaign(e, election_of(e.p, "lose"), "a");
  BOOST_REQUIRE(!ec);
  for (int i = 0; i < 20; ++i) e.store->inject(op::renew, {fault::kind::hang, 5000ms});
  std::optional<steady::time_point> a_lost, b_won;
  a.async_wait_lost([&](error_code) { a_lost = steady::now(); });
  auto b = start_campaign(election_of(second, "lose"), "b", 5000ms);
  BOOST_REQUIRE(e.wait(b, 6s));
  auto [ec_b, lead_b] = b.get();
  BOOST_REQUIRE(!ec_b);
  for (auto& c : e.store->calls())  // when b's winning take reached the store
    if (c.what == op::take && c.owner == lead_b.get_lease().owner_id()) b_won = c.at;
  BOOST_REQUIRE(a_lost.has_value());
  BOOST_REQUIRE(b_won.has_value());
  BOOST_TEST((*a_lost < *b_won), "a learned " << std::chrono::duration_cast<std::chrono::milliseconds>(*b_won - *a_lost).count()
                                             << " ms before b's take");
  BOOST_TEST(lead_b.term() > a.term());
}

BOOST_AUTO_TEST_CASE(a_cancelled_observer_completes_with_operation_aborted) {
  engine e;
  auto observer = election_of(e.p, "quiet").observe(20ms);
  auto first = next_of(observer);
  BOOST_REQUIRE(e.wait(first, 2s));
  asio::cancellation_signal cancel;
  auto next = next_of(observer, cancel.slot());
  e.run_for(50ms);
  cancel.emit(asio::cancellation_type::terminal);
  BOOST_REQUIRE(e.wait(next, 1s));
  BOOST_TEST((std::get<0>(next.get()) == asio::error::operation_aborted));
}

BOOST_AUTO_TEST_SUITE_END()
