// release_fsm without I/O: each rule of a release (docs/design.md sections 7 and 8) by the action
// it decides and the give-backs it asks for.
#include <boost/test/unit_test.hpp>
#include <limits>

#include "mongolock/error.hpp"
#include "printable.hpp"
#include "sansio/release_fsm.hpp"

namespace ml = mongolock;
using namespace mongolock::detail;
using namespace std::chrono_literals;
using kind = release_action::kind;
using handed = release_action::handed;

namespace {

constexpr std::int64_t token = (std::int64_t{7} << 32) | 41;
const boot_clock::time_point t0{std::chrono::hours(1)};

release_params lease(std::vector<line_entry> line = {}, bool others = false) {
  release_params p;
  p.name = "job";
  p.owner = "me";
  p.token = token;
  p.expiry = 30s;
  p.line_seen = std::move(line);
  p.tickets_seen = 12;
  p.others_in_line = others;
  return p;
}
const std::optional<local_waiter> nobody;
std::optional<local_waiter> waiter() { return local_waiter{"next-local", 10s, 1s, 3s}; }

outcome<bool> applied(bool v) { return success(v); }
outcome<bool> failed(ml::errc e, bool ambiguous, std::string msg = "boom") {
  outcome<bool> o;
  o.ec = make_error_code(e);
  o.ambiguous = ambiguous;
  o.message = std::move(msg);
  return o;
}
outcome<lock_doc> read_of(std::string owner, std::int64_t tok, std::vector<line_entry> line = {},
                          std::int64_t waiting = 0, std::int64_t tickets = 20) {
  lock_doc d;
  d.exists = true;
  d.held.owner = std::move(owner);
  d.held.token = tok;
  d.line = std::move(line);
  d.waiting = waiting;
  d.tickets = tickets;
  return success(d);
}
outcome<lock_doc> unread() {
  outcome<lock_doc> o;
  o.ec = make_error_code(ml::errc::server_unavailable);
  o.message = "no primary";
  return o;
}
bool no_give_back(const release_action& a) { return !a.give_back_own && !a.give_back_handed && !a.leave_enrolled; }
// A release that started with `local` and got `r` for its first write; what it does next.
release_action written(release_fsm& fsm, const std::optional<local_waiter>& local, const outcome<bool>& r) {
  fsm.resume(release_input::start(local));
  return fsm.resume(release_input::written(r, t0, t0 + 1ms));
}
// A release whose first write (a hand-off, or a plain release) matched nothing.
release_fsm missed(release_params p, const std::optional<local_waiter>& local) {
  release_fsm fsm(std::move(p));
  written(fsm, local, applied(false));
  return fsm;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(release_fsm_suite)

BOOST_AUTO_TEST_CASE(a_lease_that_saw_a_line_hands_the_lock_to_its_head) {
  release_fsm fsm(lease({{"head", 5}, {"second", 6}}));
  const auto a = fsm.resume(release_input::start(nobody));
  BOOST_TEST(a.what == kind::hand_to_line);
  const auto& t = fsm.request();
  BOOST_TEST(t.owner == "head");
  BOOST_TEST(t.token == token + 1);
  BOOST_TEST(t.expiry.count() == 30'000);  // the releaser's own: the head allows for a shorter one
  BOOST_TEST(t.observed.held.owner == "me");
  BOOST_TEST(t.observed.held.token == token);
  BOOST_TEST(t.hand_over);
  BOOST_TEST(t.leaving.size() == 1u);
  BOOST_TEST(t.leaving[0].owner == "head");
  BOOST_TEST(t.leaving[0].ticket == 5);
  BOOST_TEST(!t.enroll.has_value());
  BOOST_TEST(!t.nobody_waiting);
}

BOOST_AUTO_TEST_CASE(a_hand_off_to_the_line_enrolls_the_local_waiter_with_the_ticket_last_seen) {
  release_fsm fsm(lease({{"head", 5}}));
  BOOST_TEST(fsm.resume(release_input::start(waiter())).what == kind::hand_to_line);
  BOOST_REQUIRE(fsm.request().enroll.has_value());
  BOOST_TEST(fsm.request().enroll->owner == "next-local");
  BOOST_TEST(fsm.request().enroll->ticket == 12);
  BOOST_TEST(fsm.request().owner == "head");  // the line comes first
}

BOOST_AUTO_TEST_CASE(a_hand_off_to_the_line_that_landed_passes_the_turn_on) {
  release_fsm fsm(lease({{"head", 5}}));
  fsm.resume(release_input::start(waiter()));
  const auto a = fsm.resume(release_input::written(applied(true), t0, t0 + 5ms));
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(!a.ec);
  BOOST_TEST(a.to == handed::to_line);
  BOOST_TEST(a.count_release);
  BOOST_TEST(no_give_back(a));
}

BOOST_AUTO_TEST_CASE(a_failed_hand_off_to_the_line_gives_back_only_its_own_lease_and_the_enrolled_entry) {
  for (bool ambiguous : {true, false}) {
    release_fsm fsm(lease({{"head", 5}}));
    fsm.resume(release_input::start(waiter()));
    const auto a = fsm.resume(release_input::written(failed(ml::errc::server_unavailable, ambiguous), t0, t0 + 5ms));
    BOOST_TEST(a.what == kind::done);
    BOOST_TEST((a.ec == (ambiguous ? ml::errc::ambiguous_result : ml::errc::server_unavailable)));
    BOOST_TEST(a.give_back_own);
    BOOST_TEST(!a.give_back_handed);  // the head's lock is never freed from here
    BOOST_TEST(a.leave_enrolled);
    BOOST_TEST(a.to == handed::none);
    BOOST_TEST(a.why.find("the hand-off to the next in line failed (boom)") != std::string::npos);
  }
}

// A token nothing is above (a document written by something else): no hand-off can raise it.
BOOST_AUTO_TEST_CASE(a_lease_at_the_last_token_releases_plainly_even_with_a_line) {
  auto p = lease({{"head", 5}});
  p.token = std::numeric_limits<std::int64_t>::max();
  release_fsm fsm(p);
  BOOST_TEST(fsm.resume(release_input::start(waiter())).what == kind::release);
  p.line_seen.clear();
  release_fsm alone(p);
  BOOST_TEST(alone.resume(release_input::start(waiter())).what == kind::release);  // nor to a local waiter
}

BOOST_AUTO_TEST_CASE(without_a_line_the_lock_goes_to_the_local_waiter_on_an_empty_line) {
  release_fsm fsm(lease());
  BOOST_TEST(fsm.resume(release_input::start(waiter())).what == kind::hand_over);
  const auto& t = fsm.request();
  BOOST_TEST(t.owner == "next-local");
  BOOST_TEST(t.token == token + 1);
  BOOST_TEST(t.expiry.count() == 10'000);  // the waiter's own options
  BOOST_TEST(t.nobody_waiting);
  BOOST_TEST(t.hand_over);
  BOOST_TEST(t.leaving.empty());
  BOOST_TEST((fsm.bound(t0) == t0 + 8s));  // the new lease's E - m, less its first renewal's room min(m, E - m - R, (E - m) / 4)
}

BOOST_AUTO_TEST_CASE(with_others_in_line_or_no_local_waiter_the_release_is_plain) {
  release_fsm others(lease({}, true));
  BOOST_TEST(others.resume(release_input::start(waiter())).what == kind::release);
  release_fsm none(lease());
  BOOST_TEST(none.resume(release_input::start(nobody)).what == kind::release);
}

BOOST_AUTO_TEST_CASE(a_local_hand_off_in_time_is_granted_and_a_late_one_is_not) {
  release_fsm fsm(lease());
  fsm.resume(release_input::start(waiter()));
  auto a = fsm.resume(release_input::written(applied(true), t0, t0 + 8s - 1ms));
  BOOST_TEST(a.to == handed::to_local);
  BOOST_TEST(!a.late);
  BOOST_TEST(a.count_release);
  BOOST_TEST(!a.ec);
  release_fsm late(lease());
  late.resume(release_input::start(waiter()));
  a = late.resume(release_input::written(applied(true), t0, t0 + 8s));
  BOOST_TEST(a.to == handed::to_local);
  BOOST_TEST(a.late);  // the driver gives it back: its holder's own deadline has passed
}

BOOST_AUTO_TEST_CASE(a_failed_local_hand_off_is_never_granted_and_an_ambiguous_one_is_given_back) {
  release_fsm fsm(lease());
  auto a = written(fsm, waiter(), failed(ml::errc::server_error, true, "writeConcern"));
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(a.to == handed::none);
  BOOST_TEST((a.ec == ml::errc::ambiguous_result));
  BOOST_TEST(a.give_back_handed);
  BOOST_TEST(a.give_back_own);
  release_fsm definite(lease());
  a = written(definite, waiter(), failed(ml::errc::server_error, false));
  BOOST_TEST((a.ec == ml::errc::server_error));
  BOOST_TEST(!a.give_back_handed);
  BOOST_TEST(a.give_back_own);
}

BOOST_AUTO_TEST_CASE(a_hand_off_that_missed_reads_and_tries_again_against_what_it_shows) {
  release_fsm fsm(lease());
  fsm.resume(release_input::start(waiter()));
  auto a = fsm.resume(release_input::written(applied(false), t0, t0 + 1ms));  // someone joined the line
  BOOST_TEST(a.what == kind::read);
  BOOST_TEST(no_give_back(a));
  a = fsm.resume(release_input::read(read_of("me", token, {{"me", 3}, {"joiner", 13}}, 2, 14), waiter()));
  BOOST_TEST(a.what == kind::hand_to_line);
  BOOST_TEST(fsm.request().owner == "joiner");  // our own stale entry is not the head
  BOOST_REQUIRE(fsm.request().enroll.has_value());
  BOOST_TEST(fsm.request().enroll->ticket == 14);
}

BOOST_AUTO_TEST_CASE(a_second_miss_of_a_hand_off_to_the_line_releases_plainly) {
  auto fsm = missed(lease({{"head", 5}}), nobody);
  auto a = fsm.resume(release_input::read(read_of("me", token, {{"other", 9}}, 1), nobody));
  BOOST_TEST(a.what == kind::hand_to_line);
  a = fsm.resume(release_input::written(applied(false), t0, t0 + 2ms));
  BOOST_TEST(a.what == kind::release);
  a = fsm.resume(release_input::written(applied(true), t0, t0 + 3ms));
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(!a.ec);
}

BOOST_AUTO_TEST_CASE(a_miss_whose_read_shows_another_holder_is_a_loss) {
  auto fsm = missed(lease({{"head", 5}}), nobody);
  const auto a = fsm.resume(release_input::read(read_of("head", token + 1), nobody));
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST((a.ec == ml::errc::lease_lost));
  BOOST_TEST(no_give_back(a));
}

BOOST_AUTO_TEST_CASE(a_miss_whose_read_fails_gives_its_own_lease_back_and_says_it_is_unknown) {
  auto fsm = missed(lease({{"head", 5}}), nobody);
  const auto a = fsm.resume(release_input::read(unread(), nobody));
  BOOST_TEST((a.ec == ml::errc::ambiguous_result));
  BOOST_TEST(a.give_back_own);  // it may still be ours
  BOOST_TEST(!a.give_back_handed);
}

BOOST_AUTO_TEST_CASE(a_plain_release_is_counted) {
  release_fsm fsm(lease());
  auto a = written(fsm, nobody, applied(true));
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(a.count_release);
}

BOOST_AUTO_TEST_CASE(a_plain_release_that_matched_nothing_is_settled_by_a_majority_read) {
  release_fsm fsm(lease());
  auto a = written(fsm, nobody, applied(false));
  BOOST_TEST(a.what == kind::read);
  BOOST_TEST(a.count_release);
  a = fsm.resume(release_input::read(read_of("", token), nobody));  // free at our token: our own earlier attempt
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(!a.ec);

  auto taken = missed(lease(), nobody);
  a = taken.resume(release_input::read(read_of("", token + 1), nobody));  // free, but someone held it since
  BOOST_TEST((a.ec == ml::errc::lease_lost));
  BOOST_TEST(a.why.find(std::to_string(token + 1)) != std::string::npos);

  auto unknown = missed(lease(), nobody);
  a = unknown.resume(release_input::read(unread(), nobody));
  BOOST_TEST((a.ec == ml::errc::ambiguous_result));
  BOOST_TEST(!a.give_back_own);  // the release matched nothing: nothing of ours to free
}

BOOST_AUTO_TEST_CASE(a_plain_release_error_says_whether_it_is_retried) {
  release_fsm ambiguous(lease());
  auto a = written(ambiguous, nobody, failed(ml::errc::server_unavailable, true, "reply lost"));
  BOOST_TEST((a.ec == ml::errc::ambiguous_result));
  BOOST_TEST(a.give_back_own);
  BOOST_TEST(a.why == "reply lost; the release is retried in the background");
  BOOST_TEST(!a.count_release);

  release_fsm refused(lease());
  a = written(refused, nobody, failed(ml::errc::not_authorized, false, "not allowed"));
  BOOST_TEST((a.ec == ml::errc::not_authorized));
  BOOST_TEST(!a.give_back_own);
  BOOST_TEST(a.why == "not allowed; the lock expires on its own");
}

BOOST_AUTO_TEST_CASE(a_second_miss_of_a_local_hand_off_releases_plainly) {
  release_fsm fsm(lease());
  auto a = written(fsm, waiter(), applied(false));
  BOOST_TEST(a.what == kind::read);
  BOOST_TEST(!a.count_release);  // a hand-off that missed released nothing
  BOOST_TEST(fsm.decides_after_read());
  a = fsm.resume(release_input::read(read_of("me", token, {}, 0), waiter()));  // still ours, nobody in line
  BOOST_TEST(a.what == kind::hand_over);                // so a local hand-off again
  a = fsm.resume(release_input::written(applied(false), t0, t0 + 2ms));
  BOOST_TEST(a.what == kind::release);
  a = fsm.resume(release_input::written(applied(true), t0, t0 + 3ms));
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(!a.ec);
  BOOST_TEST(a.count_release);
}

BOOST_AUTO_TEST_CASE(a_reread_showing_others_waiting_outside_the_line_releases_plainly) {
  auto fsm = missed(lease(), waiter());
  const auto a = fsm.resume(release_input::read(read_of("me", token, {}, 1), waiter()));
  BOOST_TEST(a.what == kind::release);
}

BOOST_AUTO_TEST_CASE(a_reread_replaces_the_line_the_lease_saw) {
  release_fsm fsm(lease({{"head", 5}}));
  fsm.resume(release_input::start(nobody));
  fsm.resume(release_input::written(applied(false), t0, t0 + 1ms));  // the head left meanwhile
  const auto a = fsm.resume(release_input::read(read_of("me", token, {{"joiner", 13}}, 1), nobody));
  BOOST_TEST(a.what == kind::hand_to_line);
  BOOST_TEST(fsm.request().owner == "joiner");
  BOOST_REQUIRE(fsm.request().leaving.size() == 1u);
  BOOST_TEST(fsm.request().leaving[0].owner == "joiner");
}

BOOST_AUTO_TEST_CASE(a_reread_after_a_missed_hand_off_showing_the_lock_free_at_our_token_is_a_release) {
  auto fsm = missed(lease({{"head", 5}}), nobody);
  const auto a = fsm.resume(release_input::read(read_of("", token), nobody));  // an operator freed it at once
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(!a.ec);
  BOOST_TEST(!a.give_back_own);
}

// A re-read after a missed hand-off served by a majority snapshot older than our own take (a new
// primary's, after a failover) shows a token below ours: the lock may still be ours, unrenewed,
// so it is freed as the release ends, not left to expire.
BOOST_AUTO_TEST_CASE(a_reread_older_than_our_own_take_gives_the_lock_back) {
  auto fsm = missed(lease({{"head", 5}}), nobody);
  const auto a = fsm.resume(release_input::read(read_of("prev", token - 1), nobody));
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(a.give_back_own);
  auto later = missed(lease({{"head", 5}}), nobody);
  BOOST_TEST(!later.resume(release_input::read(read_of("next", token + 1), nobody)).give_back_own,
             "taken over since: nothing of ours to free");
}

BOOST_AUTO_TEST_CASE(no_enrollment_without_a_usable_next_ticket) {
  for (std::int64_t tickets : {std::int64_t{-1}, std::numeric_limits<std::int64_t>::max()}) {
    auto p = lease({{"head", 5}});
    p.tickets_seen = tickets;
    release_fsm fsm(p);
    BOOST_TEST(fsm.resume(release_input::start(waiter())).what == kind::hand_to_line);
    BOOST_TEST(!fsm.request().enroll.has_value());
  }
}

BOOST_AUTO_TEST_CASE(reasons_say_what_failed_and_what_happens_next) {
  auto line = missed(lease({{"head", 5}}), nobody);
  auto a = line.resume(release_input::read(unread(), nobody));
  BOOST_TEST(a.why == "the release matched nothing and the re-read failed: no primary");
  release_fsm local(lease());
  a = written(local, waiter(), failed(ml::errc::server_unavailable, false, "reset"));
  BOOST_TEST(a.why == "the hand-off to the next local waiter failed (reset); the release is retried in the background");
  BOOST_TEST(!a.count_release);
}

BOOST_AUTO_TEST_CASE(an_event_it_did_not_ask_for_settles_and_gives_the_lease_back) {
  release_fsm fsm(lease());
  const auto a = fsm.resume(release_input::written(applied(true), t0, t0 + 1ms));  // nothing was sent
  BOOST_TEST(a.what == kind::done);
  BOOST_TEST(a.ec.failed());
  BOOST_TEST(a.give_back_own);
  BOOST_TEST(a.to == handed::none);
}

BOOST_AUTO_TEST_SUITE_END()
