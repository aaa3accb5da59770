// rw_lock (docs/design.md section 10) on the in-memory store: readers share, a writer excludes
// everyone, writers come first once waiting, writer tokens above every excluded reader's.
#include <boost/asio.hpp>
#include <boost/test/unit_test.hpp>
#include <future>

#include "engine_harness.hpp"
#include "mongolock/provider.hpp"

using namespace test;

namespace {

using read_result = std::tuple<error_code, ml::lease>;
using write_result = std::tuple<error_code, ml::multi_lease>;

ml::rw_lock rw(const std::shared_ptr<ml::detail::provider_impl>& p, std::string name, int readers = 3,
               bool prefer_writers = true) {
  ml::rw_options o;
  o.max_readers = readers;
  o.prefer_writers = prefer_writers;
  return ml::detail::access::make_provider(p).create_rw_lock(std::move(name), o);
}

template <class Result, class Start>
std::future<Result> start(Start s) {
  auto done = std::make_shared<std::promise<Result>>();
  auto f = done->get_future();
  s([done](error_code ec, auto got) { done->set_value({ec, std::move(got)}); });
  return f;
}

read_result read(engine& e, ml::rw_lock l, std::chrono::milliseconds t, ml::diagnostics* d = nullptr) {
  ml::diagnostics ignored;
  auto f = start<read_result>([&](auto h) { l.reader().async_acquire_for(t, d ? *d : ignored, h); });
  BOOST_REQUIRE_MESSAGE(e.wait(f, 10s), "the read acquire did not complete in time");
  return f.get();
}

write_result write(engine& e, ml::rw_lock l, std::chrono::milliseconds t, ml::diagnostics* d = nullptr) {
  ml::diagnostics ignored;
  auto f = start<write_result>([&](auto h) { l.writer().async_acquire_for(t, d ? *d : ignored, h); });
  BOOST_REQUIRE_MESSAGE(e.wait(f, 10s), "the write acquire did not complete in time");
  return f.get();
}

bool is_free(engine& e, const std::string& name) { return e.store->get(name).held.owner.empty(); }


}  // namespace

BOOST_AUTO_TEST_SUITE(rw_lock_suite)

BOOST_AUTO_TEST_CASE(readers_share_and_a_writer_excludes_them) {
  engine e;
  auto l = rw(e.p, "r", 3);
  std::vector<ml::lease> readers;
  std::int64_t most = 0;
  for (int i = 0; i < 3; ++i) {
    auto [ec, got] = read(e, l, 0ms);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    most = std::max(most, got.fencing_token());
    readers.push_back(std::move(got));
  }
  BOOST_TEST((std::get<0>(read(e, l, 0ms)) == ml::errc::busy), "a fourth reader beyond max_readers");
  ml::diagnostics d;
  auto [busy, none] = write(e, l, 0ms, &d);
  BOOST_TEST((busy == ml::errc::busy), busy.message());
  BOOST_TEST(d.reason.find("permit 'r#") != std::string::npos, d.reason);
  BOOST_TEST(is_free(e, "r#w"), "a writer that cannot have every permit gives NAME#w back");
  for (auto& r : readers) BOOST_REQUIRE(!e.release(r));
  auto [ec, w] = write(e, l, 1s);
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_REQUIRE(w.leases().size() == 4u);
  BOOST_TEST(w.leases()[0].name() == "r#w");
  BOOST_TEST(w.highest_fencing_token() > most, "above every reader it excluded");
  BOOST_TEST((std::get<0>(read(e, l, 0ms)) == ml::errc::busy), "no reader while a writer holds");
  BOOST_TEST((std::get<0>(write(e, rw(other_provider(e), "r", 3), 0ms)) == ml::errc::busy), "nor a second writer");
  const auto first_writer = w.highest_fencing_token();
  BOOST_REQUIRE(!release(e, w));
  auto [ec_r, reader] = read(e, l, 0ms);
  BOOST_REQUIRE(!ec_r);
  BOOST_REQUIRE(!e.release(reader));
  auto [ec2, w2] = write(e, l, 1s);
  BOOST_REQUIRE(!ec2);
  BOOST_TEST(w2.highest_fencing_token() > first_writer, "writers' tokens only increase");
}

// Writer preference: once a writer waits, a new reader waits behind it, even for a free permit.
BOOST_AUTO_TEST_CASE(a_waiting_writer_goes_before_readers_that_came_after_it) {
  engine e;
  auto theirs = rw(other_provider(e), "p", 2);
  auto [ec0, first_reader] = read(e, theirs, 0ms);
  BOOST_REQUIRE(!ec0);
  std::vector<std::string> order;
  auto writer = start<write_result>([&](auto h) {
    rw(e.p, "p", 2).writer().async_acquire_for(5s, [&order, h](error_code ec, ml::multi_lease m) mutable {
      order.push_back("writer");
      h(ec, std::move(m));
    });
  });
  // The writer holds p#w and the free permit, and is in line for the reader's (observed, not
  // assumed after a fixed time).
  BOOST_REQUIRE(run_until(e, [&, &first_reader = first_reader] {
    const auto other = first_reader.name() == "p#1" ? "p#2" : "p#1";
    return !is_free(e, "p#w") && !is_free(e, other) && !e.store->get(first_reader.name()).line.empty();
  }, 3s));
  BOOST_TEST((std::get<0>(read(e, rw(other_provider(e), "p", 2), 0ms)) == ml::errc::busy));
  auto late_reader = start<read_result>([&](auto h) {
    rw(other_provider(e), "p", 2).reader().async_acquire_for(5s, [&order, h](error_code ec, ml::lease l) mutable {
      order.push_back("reader");
      h(ec, std::move(l));
    });
  });
  e.run_for(100ms);
  BOOST_REQUIRE(!e.release(first_reader));
  BOOST_REQUIRE(e.wait(writer, 3s));
  auto [ec_w, w] = writer.get();
  BOOST_REQUIRE_MESSAGE(!ec_w, ec_w.message());
  e.run_for(100ms);
  BOOST_TEST((late_reader.wait_for(0s) == std::future_status::timeout), "the reader waits for the writer");
  BOOST_REQUIRE(!release(e, w));
  BOOST_REQUIRE(e.wait(late_reader, 3s));
  BOOST_TEST(!std::get<0>(late_reader.get()));
  BOOST_TEST((order == std::vector<std::string>{"writer", "reader"}));
}

// The option itself: a free permit with a writer in its line is left to it by a preferring
// reader that waits (here the writer never comes: the permit stays free for its window) and taken
// at once by one without the preference.
BOOST_AUTO_TEST_CASE(prefer_writers_leaves_a_permit_to_the_writer_in_its_line) {
  engine e;
  auto queued = free_doc(5);
  queued.line = {ml::detail::line_entry{std::string(32, 'a'), 1}};
  queued.waiting = 1;
  queued.tickets = 2;
  e.store->put("f#1", queued);
  BOOST_TEST((std::get<0>(read(e, rw(e.p, "f", 1), 300ms)) == ml::errc::timeout));
  BOOST_TEST(is_free(e, "f#1"));
  auto [ec, overtaking] = read(e, rw(other_provider(e), "f", 1, false), 300ms);
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(overtaking.name() == "f#1");
}

// A stream of overlapping readers in two providers never leaves the lock free, yet a writer gets
// in (a generous bound, not a timing assertion), and never while a reader is inside.
BOOST_AUTO_TEST_CASE(a_stream_of_readers_does_not_starve_a_writer) {
  engine e;
  auto other = other_provider(e);
  int inside = 0, overlaps = 0;
  bool stop = false, writer_inside = false;
  auto reader = [&](std::shared_ptr<ml::detail::provider_impl> p) -> asio::awaitable<void> {
    auto l = rw(p, "s", 4);
    auto ex = co_await asio::this_coro::executor;
    while (!stop) {
      auto side = l.reader();  // named: GCC 12 and temporaries in co_await
      auto held = co_await side.async_acquire_for(20s, asio::use_awaitable);
      ++inside;
      overlaps += writer_inside;
      asio::steady_timer t(ex, 30ms);
      co_await t.async_wait(asio::use_awaitable);
      --inside;
      co_await held.async_release(asio::use_awaitable);
    }
  };
  for (int i = 0; i < 4; ++i) asio::co_spawn(e.io, reader(i % 2 ? other : e.p), asio::detached);
  e.run_for(200ms);
  BOOST_REQUIRE(inside > 0);
  const auto t0 = steady::now();
  auto [ec, w] = write(e, rw(e.p, "s", 4), 8s);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST_MESSAGE("writer in after " << waited << " ms of readers");
  writer_inside = true;
  BOOST_TEST(inside == 0);
  e.run_for(50ms);
  writer_inside = false;
  stop = true;
  BOOST_REQUIRE(!release(e, w));
  e.run_for(300ms);
  BOOST_TEST(overlaps == 0);
}

// A writer whose NAME#w is lost while it waits for permits gives back the permits it holds and
// starts over. Sitting on them without NAME#w, it could wait for a second writer (which took
// NAME#w) while that one waits for it: the order that rules out a deadlock needs NAME#w held.
BOOST_AUTO_TEST_CASE(a_writer_that_loses_its_writer_lock_while_waiting_gives_its_permits_back) {
  engine e;
  auto [ec0, reader] = read(e, rw(other_provider(e), "l", 2), 0ms);
  BOOST_REQUIRE(!ec0);
  auto writer = start<write_result>([&](auto h) { rw(e.p, "l", 2).writer().async_acquire_for(8s, h); });
  // The writer holds l#w and the free permit, and waits for the reader's.
  const std::string other = reader.name() == "l#1" ? "l#2" : "l#1";
  BOOST_REQUIRE(run_until(e, [&] { return !is_free(e, "l#w") && !is_free(e, other); }, 3s));
  auto moved = e.store->get("l#w");  // l#w moves on, as a force release and another's take would
  moved.held.owner = std::string(32, 'b');
  moved.held.token += 1;
  e.store->put("l#w", moved);
  // The writer's next renewal (every 333 ms) finds l#w gone, and the permit is given back.
  BOOST_TEST(run_until(e, [&] { return is_free(e, other); }, 3s), "the permit is given back once l#w is lost");
  e.store->put("l#w", free_doc(moved.held.token));
  BOOST_REQUIRE(!e.release(reader));
  BOOST_REQUIRE(e.wait(writer, 5s));
  auto [ec, w] = writer.get();
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(w.held());
}

// Cancelled while it waits for permits: it completes with operation_aborted and holds nothing,
// whichever of its two waits (the permits, the loss of NAME#w) answers the cancellation first.
BOOST_AUTO_TEST_CASE(cancelling_a_waiting_writer_takes_nothing) {
  for (int round = 0; round < 5; ++round) {
    engine e;
    const std::string name = "cw" + std::to_string(round);
    auto [ec0, reader] = read(e, rw(other_provider(e), name, 2), 0ms);
    BOOST_REQUIRE(!ec0);
    asio::cancellation_signal cancel;
    auto writer = start<write_result>([&](auto h) {
      rw(e.p, name, 2).writer().async_acquire(asio::bind_cancellation_slot(cancel.slot(), h));
    });
    e.run_for(150ms);  // NAME#w and the free permit taken, waiting for the reader's
    cancel.emit(asio::cancellation_type::terminal);
    BOOST_REQUIRE(e.wait(writer, 2s));
    auto [ec, w] = writer.get();
    BOOST_TEST((ec == asio::error::operation_aborted), ec.message());
    BOOST_TEST(!w);
    e.run_for(100ms);
    BOOST_TEST(is_free(e, name + "#w"));
    BOOST_TEST(is_free(e, reader.name() == name + "#1" ? name + "#2" : name + "#1"));
  }
}

BOOST_AUTO_TEST_CASE(a_writer_that_times_out_gives_back_what_it_took) {
  engine e;
  auto [ec0, reader] = read(e, rw(other_provider(e), "t", 2), 0ms);
  BOOST_REQUIRE(!ec0);
  const auto t0 = steady::now();
  ml::diagnostics d;
  auto [ec, w] = write(e, rw(e.p, "t", 2), 300ms, &d);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
  BOOST_TEST((ec == ml::errc::timeout), ec.message());
  BOOST_TEST(d.reason.find("permit '" + reader.name() + "'") != std::string::npos, d.reason);
  BOOST_TEST(took < 1000, took << " ms");
  BOOST_TEST(is_free(e, "t#w"));
  BOOST_TEST(is_free(e, reader.name() == "t#1" ? "t#2" : "t#1"));
  BOOST_TEST(reader.held());
}

// A reader that died holding a permit: a writer takes it over after an observed expiry.
BOOST_AUTO_TEST_CASE(a_dead_readers_permit_is_taken_over_by_a_writer_after_its_expiry) {
  engine e;
  auto dead = free_doc(10);
  dead.held.owner = std::string(32, 'd');
  e.store->put("k#2", dead);
  const auto t0 = steady::now();
  auto [ec, w] = write(e, rw(e.p, "k", 2), 5s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0).count();
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_TEST(w.fencing_token("k#2") > 10);
  BOOST_TEST(took >= 1000, "never before the dead reader's expiry: " << took << " ms");
  BOOST_TEST(took < 2500, took << " ms");
}

BOOST_AUTO_TEST_CASE(a_semaphore_of_the_same_name_is_a_declaration_mismatch) {
  engine e;
  auto s = ml::detail::access::make_provider(e.p).create_semaphore("x", 3);
  auto f = start<read_result>([&](auto h) { s.async_acquire_for(0ms, h); });
  BOOST_REQUIRE(e.wait(f, 2s));
  BOOST_REQUIRE(!std::get<0>(f.get()));
  ml::diagnostics d;
  auto [ec, got] = read(e, rw(other_provider(e), "x", 3), 0ms, &d);
  BOOST_TEST((ec == ml::errc::declaration_mismatch), ec.message());
  BOOST_TEST(d.reason == "'x' is declared as a semaphore of 3 permits, not a rw_lock of 3");
  auto [ec_w, w] = write(e, rw(other_provider(e), "x", 3), 0ms);
  BOOST_TEST((ec_w == ml::errc::declaration_mismatch), ec_w.message());
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused_before_any_server_call) {
  engine e;
  for (int readers : {0, -1, 65}) {
    ml::diagnostics d;
    auto [ec, got] = read(e, rw(e.p, "b", readers), 0ms, &d);
    BOOST_TEST((ec == ml::errc::invalid_options), ec.message());
    BOOST_TEST(d.reason == "rw_options::max_readers must be 1..64, not " + std::to_string(readers));
    auto [ec_w, w] = write(e, rw(e.p, "b", readers), 1s);
    BOOST_TEST((ec_w == ml::errc::invalid_options), ec_w.message());
  }
  ml::diagnostics d;
  BOOST_TEST((std::get<0>(write(e, rw(e.p, "b"), -5ms, &d)) == ml::errc::invalid_options));
  BOOST_TEST(d.reason.find("negative") != std::string::npos, d.reason);
  BOOST_TEST((std::get<0>(read(e, rw(e.p, ""), 0ms)) == ml::errc::invalid_name));
  BOOST_TEST(e.store->calls().empty());
}

// Writer preference when the permit the writer waits for is held by a reader of its own provider,
// won by the reader's first look: that look takes no turn of the permit in the provider, so the
// writer does not park behind the reader; it joins the permit's line, and a reader of another
// provider that comes after it waits behind it (as in
// a_waiting_writer_goes_before_readers_that_came_after_it, with the first reader local).
BOOST_AUTO_TEST_CASE(a_writer_behind_a_local_reader_goes_before_a_later_remote_reader) {
  engine e;
  auto [ec0, local_reader] = read(e, rw(e.p, "q", 1), 1s);  // a wait: its first look takes q#1
  BOOST_REQUIRE(!ec0);
  std::vector<std::string> order;
  bool wdone = false, rdone = false;
  write_result wres;
  read_result rres;
  rw(e.p, "q", 1).writer().async_acquire_for(5s, [&](error_code ec, ml::multi_lease m) {
    order.push_back("writer");
    wres = {ec, std::move(m)};
    wdone = true;
  });
  // The writer holds q#w and is in q#1's line (observed, not assumed after a fixed time).
  BOOST_REQUIRE(run_until(e, [&] { return !is_free(e, "q#w") && !e.store->get("q#1").line.empty(); }, 3s));
  rw(other_provider(e), "q", 1).reader().async_acquire_for(5s, [&](error_code ec, ml::lease l) {
    order.push_back("reader");
    rres = {ec, std::move(l)};
    rdone = true;
  });
  // The reader has looked at q#1 and waits behind the writer.
  BOOST_REQUIRE(run_until(e, [&] { return e.store->get("q#1").line.size() >= 2; }, 3s));
  BOOST_REQUIRE(!wdone);
  BOOST_REQUIRE(!rdone);
  BOOST_TEST_MESSAGE("line of q#1: " << e.store->get("q#1").line.size() << " entries");
  BOOST_REQUIRE(!e.release(local_reader));
  BOOST_REQUIRE(run_until(e, [&] { return wdone || rdone; }, 3s));
  e.run_for(100ms);
  BOOST_TEST((order == std::vector<std::string>{"writer"}), "first: " << order.front() << ", " << order.size());
  bool r_released = false, w_released = false;
  if (rdone && !std::get<0>(rres)) r_released = !e.release(std::get<1>(rres));
  if (wdone && !std::get<0>(wres)) w_released = !release(e, std::get<1>(wres));
  BOOST_REQUIRE(run_until(e, [&] { return wdone && rdone; }, 5s));
  if (!r_released && !std::get<0>(rres)) BOOST_TEST(!e.release(std::get<1>(rres)));
  if (!w_released && !std::get<0>(wres)) BOOST_TEST(!release(e, std::get<1>(wres)));
}

BOOST_AUTO_TEST_SUITE_END()
