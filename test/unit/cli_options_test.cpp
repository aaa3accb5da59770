// The mongolock tool's command line, continued: where options may go, why a duration is refused,
// and list's filter.
#include <boost/test/unit_test.hpp>

#include "args.hpp"
#include "cli_parse.hpp"

using namespace std::chrono_literals;
namespace cli = mongolock::cli;


BOOST_AUTO_TEST_SUITE(cli_options)

// The option table of docs/cli.md lists --once-per, --hold-at-least and --state-dir with the global options:
// they are accepted before `run` as after it, and run's own checks hold in both positions.
BOOST_AUTO_TEST_CASE(scheduled_job_options_go_before_or_after_run) {
  for (auto args : {std::vector<std::string>{"--wait", "5m", "--once-per", "20h", "--hold-at-least=10m",
                                             "--state-dir", "/s", "run", "n", "true"},
                    std::vector<std::string>{"--state-dir=/s", "--once-per=20h", "-w", "5m", "run",
                                             "--hold-at-least", "10m", "n", "true"},
                    std::vector<std::string>{"--wait", "5m", "run", "--once-per", "20h", "--hold-at-least=10m",
                                             "--state-dir", "/s", "n", "true"}}) {
    const auto r = parse(args);
    BOOST_TEST(r.error.empty(), r.error);
    BOOST_TEST(r.opts.once_per == 20h);
    BOOST_TEST(r.opts.hold_at_least == 10min);
    BOOST_TEST(r.opts.state_dir == "/s");
    BOOST_TEST(r.opts.argv == std::vector<std::string>{"true"});
  }
  // run's checks, with the option before `run`.
  BOOST_TEST(parse({"--once-per", "20h", "run", "n", "true"}).error.find("--once-per 20h needs --wait") == 0);
  BOOST_TEST(parse({"--wait", "20s", "--once-per", "2s", "run", "n", "true"}).error.find(
                 "--once-per 2s must exceed --wait 20s") == 0);
  BOOST_TEST(parse({"--wait", "1s", "--once-per", "1h", "run", "-n", "2", "n", "true"}).error.find(
                 "go with a plain lock") != std::string::npos);
  BOOST_TEST(parse({"--once-per", "21h", "run", "n", "true"}).error == "--once-per must be between 0 and 20h");
  // Only run uses them: given to another command they are a mistake, said as such.
  BOOST_TEST(parse({"--once-per", "1h", "list"}).error == "--once-per goes with run");
  BOOST_TEST(parse({"--hold-at-least", "1h", "status", "n"}).error == "--hold-at-least goes with run");
  BOOST_TEST(parse({"--state-dir", "/s", "status", "n"}).error.empty());  // harmless, as MONGOLOCK_STATE_DIR
}

// A refused duration says why: the user sees which rule the text broke, not only that it did.
BOOST_AUTO_TEST_CASE(a_refused_duration_says_why) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"1.0005s", "durations have millisecond precision"},
      {"0.5ms", "durations have millisecond precision"},
      {"0.0000000001s", "durations have millisecond precision"},
      {"-1s", "durations cannot be negative"},
      {"1m30", "'30' has no unit (ms, s, m or h; a bare number is seconds only on its own)"},
      {"5x", "unknown unit 'x' (use ms, s, m or h)"},
      {"10 s", "spaces are not allowed"},
      {"99999999999999999999h", "too large (above 31,000 years)"},
      {"9999999999999999h", "too large (above 31,000 years)"},
      {"", "empty"},
      {"s", "a number must come before each unit"},
      {".5s", "a number must come before each unit"},
      {"1.s", "a decimal point needs digits after it"},
      {"1..5s", "a decimal point needs digits after it"},
      {"1.5.5s", "unknown unit '.' (use ms, s, m or h)"}};
  for (const auto& [text, reason] : cases) BOOST_TEST_CONTEXT(text) {
      std::string why;
      BOOST_TEST(!cli::parse_duration(text, &why).has_value());
      BOOST_TEST(why == reason);
      BOOST_TEST(parse({"--wait", text, "list"}).error ==
                 "invalid duration for --wait: '" + text + "': " + reason);
    }
  std::string why = "untouched";
  BOOST_TEST(cli::parse_duration("1.5s", &why).value_or(-1ms) == 1500ms);
  BOOST_TEST(why == "untouched");  // set only on failure
  BOOST_TEST(parse({"list"}, {{"MONGOLOCK_TTL", "1.0005s"}}).error ==
             "invalid duration for MONGOLOCK_TTL: '1.0005s': durations have millisecond precision");
}

// list --held: only the documents held now, for a cron check or a dashboard.
BOOST_AUTO_TEST_CASE(list_held_filters_to_held_locks) {
  const auto r = parse({"list", "--held"});
  BOOST_TEST(r.error.empty(), r.error);
  BOOST_TEST(r.opts.held_only);
  BOOST_TEST(!parse({"list"}).opts.held_only);
  BOOST_TEST(parse({"--held", "list"}).error == "--held goes after list: mongolock list --held");
  BOOST_TEST(parse({"status", "--held", "n"}).error == "--held goes after list: mongolock list --held");
  BOOST_TEST(parse({"list", "--held=yes"}).error == "--held takes no value");
  BOOST_TEST(cli::usage().find("list [--held]") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
