// One shape for every primitive's operations: each operation that calls the server takes a
// diagnostics& for its reason, and each try takes try_options (`within` bounds the try,
// confirm_silent_holder lets it watch a long-silent holder), as lock's do. That every primitive
// has the whole acquire set is checked at compile time (acquire_set below); the cases check what
// the calls do.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <concepts>
#include <future>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;  // the harness: asio, ml, error_code, steady, engine, fast, fault, op, ...

namespace {

ml::provider provider_of(engine& e) { return ml::detail::access::make_provider(e.p); }

// Runs `start(handler)` to completion: the handler takes (error_code, Got); (ec, got) returned.
template <class Got, class Start>
std::tuple<error_code, Got> run(engine& e, Start start, std::chrono::milliseconds limit = 5s) {
  auto done = std::make_shared<std::promise<std::tuple<error_code, Got>>>();
  auto f = done->get_future();
  start([done](error_code ec, Got got) { done->set_value({ec, std::move(got)}); });
  BOOST_REQUIRE_MESSAGE(e.wait(f, limit), "the operation did not complete in time");
  return f.get();
}

// Runs a void(error_code) operation to completion.
template <class Start>
error_code run_ec(engine& e, Start start) {
  auto f = engine::ec_future(start);
  BOOST_REQUIRE_MESSAGE(e.wait(f, 5s), "the operation did not complete in time");
  return f.get();
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The whole acquire set (detail/acquire_surface.hpp), each overload completing with
// void(error_code, Value), with and without a diagnostics&, and asio::deferred by default.
template <class T, class Value>
concept acquire_set = requires(const T& t, ml::diagnostics& d, void (*h)(error_code, Value)) {
  { t.async_acquire(h) } -> std::same_as<void>;
  { t.async_acquire(d, h) } -> std::same_as<void>;
  { t.async_acquire_for(1s, h) } -> std::same_as<void>;
  { t.async_acquire_for(1s, d, h) } -> std::same_as<void>;
  { t.async_try_acquire(h) } -> std::same_as<void>;
  { t.async_try_acquire(d, h) } -> std::same_as<void>;
  { t.async_try_acquire(ml::try_options{.within = 1s}, h) } -> std::same_as<void>;
  { t.async_try_acquire(ml::try_options{.confirm_silent_holder = true}, d, h) } -> std::same_as<void>;
  t.async_acquire();
  t.async_acquire_for(1s, d);
  t.async_try_acquire(ml::try_options{}, d);
};
static_assert(acquire_set<ml::lock, ml::lease>);
static_assert(acquire_set<ml::semaphore, ml::lease>);
static_assert(acquire_set<ml::multi_lock, ml::multi_lease>);
static_assert(acquire_set<ml::rw_lock::reader_view, ml::lease>);
static_assert(acquire_set<ml::rw_lock::writer_view, ml::multi_lease>);
static_assert(acquire_set<ml::election::candidate_view, ml::leadership>);
// A diagnostics or try_options is never taken for the token (detail::is_token_v).
static_assert(!ml::detail::is_token_v<ml::diagnostics&> && !ml::detail::is_token_v<ml::try_options>);

}  // namespace

BOOST_AUTO_TEST_SUITE(uniform_api_suite)

// ---- diagnostics& on every operation that calls the server ----

BOOST_AUTO_TEST_CASE(proclaim_and_resign_give_their_reasons) {
  engine e;
  auto el = provider_of(e).create_election("el");
  auto [ec, leading] = run<ml::leadership>(e, [&](auto h) { el.candidate("a").async_acquire(h); });
  BOOST_REQUIRE(!ec);
  ml::diagnostics d;
  auto bad = run_ec(e, [&, &leading = leading](auto h) { leading.async_proclaim("", d, h); });
  BOOST_TEST((bad == ml::errc::invalid_options));
  BOOST_TEST(d.reason == "an election value must not be empty");
  d.reason = "stale";
  BOOST_TEST(!run_ec(e, [&, &leading = leading](auto h) { leading.async_proclaim("b", d, h); }));
  BOOST_TEST(d.reason.empty());
  BOOST_TEST(!run_ec(e, [&, &leading = leading](auto h) { leading.async_resign(d, h); }));
  auto after = run_ec(e, [&, &leading = leading](auto h) { leading.async_proclaim("c", d, h); });
  BOOST_TEST((after == ml::errc::released));
  BOOST_TEST(d.reason == "the leadership was resigned: nothing to proclaim");
  auto again = run_ec(e, [&, &leading = leading](auto h) { leading.async_resign(d, h); });
  BOOST_TEST((again == ml::errc::not_held));
  BOOST_TEST(d.reason == "the lease was already released");
  ml::leadership none;
  auto empty = run_ec(e, [&](auto h) { none.async_proclaim("x", d, h); });
  BOOST_TEST((empty == ml::errc::not_held));
  BOOST_TEST(d.reason == "this leadership holds no lease");
}

BOOST_AUTO_TEST_CASE(campaign_for_leader_and_next_give_their_reasons) {
  engine e;
  auto el = provider_of(e).create_election("el");
  ml::diagnostics d;
  auto [refused, nothing] = run<ml::leadership>(e, [&](auto h) { el.candidate("v").async_acquire_for(-1ms, d, h); });
  BOOST_TEST((refused == ml::errc::invalid_options));
  BOOST_TEST(d.reason == "the acquire timeout is negative");

  e.store->inject(op::read, {fault::kind::unavailable});
  auto [read_ec, none] = run<ml::leader_info>(e, [&](auto h) { el.async_leader(d, h); });
  BOOST_TEST((read_ec == ml::errc::server_unavailable));
  BOOST_TEST(d.reason == "reading the leader of 'el': no server selected");
  d.reason = "stale";
  auto [ok, info] = run<ml::leader_info>(e, [&](auto h) { el.async_leader(d, h); });
  BOOST_TEST(!ok);
  BOOST_TEST(d.reason.empty());

  auto watch = el.observe(10ms);
  e.store->inject(op::read, {fault::kind::unavailable});
  auto [poll_ec, unseen] = run<ml::leader_info>(e, [&](auto h) { watch.async_next(d, h); });
  BOOST_TEST((poll_ec == ml::errc::server_unavailable));
  BOOST_TEST(d.reason == "polling the leader of 'el': no server selected");
  auto [seen_ec, seen] = run<ml::leader_info>(e, [&](auto h) { watch.async_next(d, h); });
  BOOST_TEST(!seen_ec);
  BOOST_TEST(d.reason.empty());
}

BOOST_AUTO_TEST_CASE(a_multi_lease_release_names_the_first_failing_lease) {
  engine e;
  auto m = provider_of(e).create_multi_lock({"mb", "ma"});
  auto [ec, both] = run<ml::multi_lease>(e, [&](auto h) { m.async_acquire(h); });
  BOOST_REQUIRE(!ec);
  // "mb" taken over behind its holder's back: its lease is lost at its next renewal.
  auto stolen = e.store->get("mb");
  stolen.held.owner = "thief";
  stolen.held.token += 1;
  e.store->put("mb", stolen);
  BOOST_REQUIRE(run_until(e, [&, &both = both] { return !both.leases()[1].held(); }, 3s));
  ml::diagnostics d;
  auto lost = run_ec(e, [&, &both = both](auto h) { both.async_release(d, h); });
  BOOST_TEST((lost == ml::errc::lease_lost), lost.message());
  BOOST_TEST(starts_with(d.reason, "lock 'mb': "), d.reason);
  BOOST_TEST(d.reason.size() > std::string("lock 'mb': ").size(), d.reason);
  // Both fail now: the first in name order speaks.
  auto again = run_ec(e, [&, &both = both](auto h) { both.async_release(d, h); });
  BOOST_TEST((again == ml::errc::not_held));
  BOOST_TEST(d.reason == "lock 'ma': the lease was already released");
  ml::multi_lease empty;
  BOOST_TEST((run_ec(e, [&](auto h) { empty.async_release(d, h); }) == ml::errc::not_held));
  BOOST_TEST(d.reason == "this multi_lease holds no acquisition");
}

// ---- try_options on every primitive's try ----

BOOST_AUTO_TEST_CASE(a_semaphore_try_confirms_a_silent_permit_holder_only_when_asked) {
  engine e;  // margin 100 ms
  auto s = provider_of(e).create_semaphore("s", 1);
  e.store->put("s#1", held_by_a_silent_holder(200ms));
  auto [busy, none] = run<ml::lease>(e, [&](auto h) { s.async_try_acquire(h); });
  BOOST_TEST((busy == ml::errc::busy), busy.message());
  const auto started = steady::now();
  ml::diagnostics d;
  auto [ec, got] = run<ml::lease>(e, [&](auto h) { s.async_try_acquire({.confirm_silent_holder = true}, d, h); });
  BOOST_TEST(!ec, ec.message() << ": " << d.reason);
  BOOST_TEST((steady::now() - started >= 300ms));  // watched for expiry + margin
  BOOST_TEST(got.name() == "s#1");
  BOOST_TEST(got.fencing_token() > 3);
  e.release(got);
}

BOOST_AUTO_TEST_CASE(a_semaphore_try_out_of_time_before_its_last_permit_is_a_timeout) {
  engine e;
  auto s = provider_of(e).create_semaphore("t", 2);
  e.store->put("t#1", held_by_a_silent_holder(2000ms));
  e.store->put("t#2", held_by_a_silent_holder(2000ms));
  const auto started = steady::now();
  ml::diagnostics d;
  auto [ec, none] = run<ml::lease>(
      e, [&](auto h) { s.async_try_acquire({.within = 250ms, .confirm_silent_holder = true}, d, h); });
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  BOOST_TEST(starts_with(d.reason, "the try ran out of time before it could look at 't#"), d.reason);
  BOOST_TEST((steady::now() - started < 1s));  // not the holders' 2 s windows
  auto [refused, nothing] = run<ml::lease>(e, [&](auto h) { s.async_try_acquire({.within = -1ms}, d, h); });
  BOOST_TEST((refused == ml::errc::invalid_options));
}

BOOST_AUTO_TEST_CASE(a_rw_lock_read_try_confirms_a_silent_permit_holder_only_when_asked) {
  engine e;
  auto l = provider_of(e).create_rw_lock("r", {.max_readers = 1});
  e.store->put("r#1", held_by_a_silent_holder(200ms));
  ml::diagnostics d;
  auto [busy, none] = run<ml::lease>(e, [&](auto h) { l.reader().async_try_acquire(d, h); });
  BOOST_TEST((busy == ml::errc::busy), busy.message());
  auto [plain, still] = run<ml::lease>(e, [&](auto h) { l.reader().async_try_acquire(h); });
  BOOST_TEST((plain == ml::errc::busy));
  auto [ec, got] = run<ml::lease>(e, [&](auto h) { l.reader().async_try_acquire({.confirm_silent_holder = true}, h); });
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(got.name() == "r#1");
  e.release(got);
}

BOOST_AUTO_TEST_CASE(a_rw_lock_write_try_confirms_a_silent_reader_only_when_asked) {
  engine e;
  auto l = provider_of(e).create_rw_lock("w", {.max_readers = 2});
  e.store->put("w#2", held_by_a_silent_holder(200ms));
  auto [busy, none] = run<ml::multi_lease>(e, [&](auto h) { l.writer().async_try_acquire(h); });
  BOOST_TEST((busy == ml::errc::busy), busy.message());
  BOOST_TEST(e.store->get("w#w").held.owner.empty());  // what the try took is given back
  ml::diagnostics d;
  auto [ec, all] =
      run<ml::multi_lease>(e, [&](auto h) { l.writer().async_try_acquire({.confirm_silent_holder = true}, d, h); });
  BOOST_TEST(!ec, ec.message() << ": " << d.reason);
  BOOST_TEST(all.leases().size() == 3u);
  BOOST_TEST(!run_ec(e, [&, &all = all](auto h) { all.async_release(h); }));
}

// A set stops at its first held part: a confirmation cut short there is busy, as a lock's is; a
// read try looks at every permit, and runs out of time before the last.
BOOST_AUTO_TEST_CASE(a_rw_lock_try_is_bounded_by_within) {
  engine e;
  auto l = provider_of(e).create_rw_lock("x", {.max_readers = 2});
  e.store->put("x#1", held_by_a_silent_holder(2000ms));
  e.store->put("x#2", held_by_a_silent_holder(2000ms));
  ml::diagnostics d;
  const auto started = steady::now();
  auto [ec, none] = run<ml::multi_lease>(
      e, [&](auto h) { l.writer().async_try_acquire({.within = 250ms, .confirm_silent_holder = true}, d, h); });
  BOOST_TEST((ec == ml::errc::busy), ec.message());
  BOOST_TEST(d.reason == "permit 'x#1' is held");
  BOOST_TEST((steady::now() - started < 1s));  // not the holders' 2 s windows
  BOOST_TEST(e.store->get("x#w").held.owner.empty());
  auto [read_ec, no_read] = run<ml::lease>(
      e, [&](auto h) { l.reader().async_try_acquire({.within = 250ms, .confirm_silent_holder = true}, d, h); });
  BOOST_TEST((read_ec == ml::errc::timeout), read_ec.message());
  BOOST_TEST(starts_with(d.reason, "the try ran out of time before it could look at 'x#"), d.reason);
  e.store->inject(op::read, {fault::kind::hang, 3000ms});
  const auto hung = steady::now();
  auto [late, nothing] = run<ml::multi_lease>(e, [&](auto h) { l.writer().async_try_acquire({.within = 200ms}, d, h); });
  BOOST_TEST((late == ml::errc::timeout), late.message());
  // The part whose look hung (a read: a blind take needs none, so it is a part found held).
  BOOST_TEST(d.reason.find("': time limit reached while the server call was in flight") != std::string::npos, d.reason);
  BOOST_TEST((steady::now() - hung < 1s));  // not the hung take's 3 s
}

BOOST_AUTO_TEST_CASE(a_multi_lock_try_confirms_a_silent_member_only_when_asked) {
  engine e;
  auto m = provider_of(e).create_multi_lock({"mb", "ma"});
  e.store->put("mb", held_by_a_silent_holder(200ms));
  ml::diagnostics d;
  auto [busy, none] = run<ml::multi_lease>(e, [&](auto h) { m.async_try_acquire(d, h); });
  BOOST_TEST((busy == ml::errc::busy), busy.message());
  BOOST_TEST(d.reason == "lock 'mb' is held");
  BOOST_TEST(e.store->get("ma").held.owner.empty());  // given back
  auto [plain, still] = run<ml::multi_lease>(e, [&](auto h) { m.async_try_acquire(h); });
  BOOST_TEST((plain == ml::errc::busy));
  auto [ec, both] = run<ml::multi_lease>(e, [&](auto h) { m.async_try_acquire({.confirm_silent_holder = true}, h); });
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(both.leases().size() == 2u);
  BOOST_TEST(!run_ec(e, [&, &both = both](auto h) { both.async_release(h); }));
}

BOOST_AUTO_TEST_CASE(a_multi_lock_try_is_bounded_by_within) {
  engine e;
  auto m = provider_of(e).create_multi_lock({"nb", "na"});
  e.store->put("na", held_by_a_silent_holder(2000ms));
  ml::diagnostics d;
  const auto started = steady::now();
  auto [ec, none] = run<ml::multi_lease>(
      e, [&](auto h) { m.async_try_acquire({.within = 250ms, .confirm_silent_holder = true}, d, h); });
  BOOST_TEST((ec == ml::errc::busy), ec.message());  // cut short, as a lock's confirmation is
  BOOST_TEST(d.reason == "lock 'na' is held");
  BOOST_TEST((steady::now() - started < 1s));
  e.store->put("na", free_doc(4));
  e.store->inject(op::take, {fault::kind::hang, 3000ms});
  const auto hung = steady::now();
  auto [late, nothing] = run<ml::multi_lease>(e, [&](auto h) { m.async_try_acquire({.within = 200ms}, d, h); });
  BOOST_TEST((late == ml::errc::timeout), late.message());
  BOOST_TEST(starts_with(d.reason, "lock 'na'"), d.reason);
  BOOST_TEST((steady::now() - hung < 1s));  // not the hung take's 3 s
}

BOOST_AUTO_TEST_CASE(a_try_campaign_confirms_a_silent_leader_only_when_asked) {
  engine e;
  auto el = provider_of(e).create_election("el");
  e.store->put("el", held_by_a_silent_holder(200ms));
  ml::diagnostics d;
  auto [busy, none] = run<ml::leadership>(e, [&](auto h) { el.candidate("v").async_try_acquire(d, h); });
  BOOST_TEST((busy == ml::errc::busy), busy.message());
  auto [plain, still] = run<ml::leadership>(e, [&](auto h) { el.candidate("v").async_try_acquire(h); });
  BOOST_TEST((plain == ml::errc::busy));
  // A confirmation cut short by `within` is busy, as lock's try is (a single lock was looked at).
  auto [cut, short_] = run<ml::leadership>(
      e, [&](auto h) { el.candidate("v").async_try_acquire({.within = 50ms, .confirm_silent_holder = true}, h); });
  BOOST_TEST((cut == ml::errc::busy), cut.message());
  auto [ec, leading] =
      run<ml::leadership>(e, [&](auto h) { el.candidate("v").async_try_acquire({.confirm_silent_holder = true}, d, h); });
  BOOST_TEST(!ec, ec.message() << ": " << d.reason);
  BOOST_TEST(leading.value() == "v");
  BOOST_TEST(leading.term() > 3);
  BOOST_TEST(!run_ec(e, [&, &leading = leading](auto h) { leading.async_resign(h); }));
}

// One options type: a lock's own options are a lock_options, whose collection fields
// (durability, write_timeout, idle_cleanup) must be the provider's; the reason names the field.
BOOST_AUTO_TEST_CASE(a_lock_takes_lock_options_whose_storage_fields_are_the_providers) {
  engine e;
  auto p = provider_of(e);
  auto own = p.options();
  own.expiry = 2000ms;
  BOOST_TEST(p.create_lock("own", own).name() == "own");
  auto refusal = [&](auto change) -> std::string {
    auto o = p.options();
    change(o);
    try {
      p.create_lock("own", o);
    } catch (const boost::system::system_error& x) {
      BOOST_TEST((x.code() == ml::errc::invalid_options));
      return x.what();
    }
    return "accepted";
  };
  const std::string durability = refusal([](ml::lock_options& o) { o.durability = ml::write_concern::acknowledged; });
  BOOST_TEST(starts_with(durability, "lock 'own': durability must be the provider's"), durability);
  const std::string wtimeout = refusal([](ml::lock_options& o) { o.write_timeout = 20000ms; });
  BOOST_TEST(starts_with(wtimeout, "lock 'own': write_timeout must be the provider's"), wtimeout);
  const std::string idle = refusal([](ml::lock_options& o) { o.idle_cleanup = std::chrono::hours(48); });
  BOOST_TEST(starts_with(idle, "lock 'own': idle_cleanup must be the provider's"), idle);
  const std::string invalid = refusal([](ml::lock_options& o) { o.expiry = 50ms; });
  BOOST_TEST(starts_with(invalid, "lock 'own': expiry must be in 100 ms..24 h"), invalid);
}

BOOST_AUTO_TEST_SUITE_END()
