// How the mongolock tool names a lock's holder (holder_text.hpp): a sentence, and a hint when the
// holder has been silent past its ttl.
#include <boost/test/unit_test.hpp>

#include "holder_text.hpp"

using namespace std::chrono_literals;
namespace cli = mongolock::cli;

namespace {
constexpr std::int64_t now = 1'800'000'000'000;  // this host's wall clock, ms

mongolock::lock_info holder(std::int64_t silent_for_ms, std::chrono::milliseconds ttl = 1000ms) {
  mongolock::lock_info i;
  i.name = "nightly";
  i.exists = i.held = true;
  i.owner = "0123456789abcdef0123456789abcdef";
  i.host = "db7";
  i.pid = 4242;
  i.label = "report";
  i.expiry = ttl;
  i.renewed_at_ms = now - silent_for_ms;
  return i;
}
}  // namespace

BOOST_AUTO_TEST_SUITE(cli_holder)

BOOST_AUTO_TEST_CASE(a_holder_reads_as_a_sentence) {
  BOOST_TEST(cli::held_by(holder(250), now) ==
             "is held by 0123456789abcdef0123456789abcdef (host db7, pid 4242, label report), renewed 250 ms ago");
  auto bare = holder(0);
  bare.host.clear(), bare.pid = 0, bare.label.clear(), bare.renewed_at_ms = 0;
  BOOST_TEST(cli::held_by(bare, now) == "is held by 0123456789abcdef0123456789abcdef (host unnamed)");
  auto ahead = holder(-5000);  // the holder's clock ahead of ours: never "renewed -5000 ms ago"
  BOOST_TEST(cli::held_by(ahead, now).ends_with(", renewed 0 ms ago"));
  auto broken = holder(90'000);
  broken.owner = "(force-released)";
  BOOST_TEST(cli::held_by(broken, now) == "was force-released, and its former holder's lease is not yet waited out");
  auto odd = holder(1);
  odd.host = "a\nb\x1b[31m";  // another process wrote it: no terminal control reaches the user
  BOOST_TEST(cli::held_by(odd, now).find("host a?b?[31m,") != std::string::npos);
}

// The hint comes once the last renewal is older than the ttl (by the wall clocks), and states the
// waiter's rule (docs/design.md section 2): its own observation of ttl + margin, and a try's 3 x ttl.
BOOST_AUTO_TEST_CASE(a_holder_silent_past_its_ttl_gets_a_hint) {
  BOOST_TEST(cli::silence_hint(holder(250), now).empty());
  BOOST_TEST(cli::silence_hint(holder(1000), now).empty());  // exactly one ttl: not past it
  BOOST_TEST(cli::silence_hint(holder(25'222), now) ==
             " (silent for longer than its ttl of 1000 ms by the two wall clocks: it may have crashed; a waiter "
             "takes over once it has itself seen no renewal for that ttl plus its margin, and --wait 0 watches "
             "only a holder silent for over 3 x its ttl)");
  BOOST_TEST(cli::silence_hint(holder(25'222, 30s), now).empty());
  auto free = holder(25'222);
  free.held = false;
  BOOST_TEST(cli::silence_hint(free, now).empty());
  auto broken = holder(25'222);
  broken.owner = "(force-released)";  // silent by design, not crashed
  BOOST_TEST(cli::silence_hint(broken, now).empty());
  auto never_renewed = holder(0);
  never_renewed.renewed_at_ms = 0;  // a document without the hint
  BOOST_TEST(cli::silence_hint(never_renewed, now).empty());
}

BOOST_AUTO_TEST_SUITE_END()
