// The mongolock tool's command line: durations, environment, usage errors.
#include <boost/test/unit_test.hpp>
#include <limits>

#include "args.hpp"
#include "cli_parse.hpp"
#include "json.hpp"
#include "mongolock/error.hpp"
#include "mongolock/options.hpp"

using namespace std::chrono_literals;
namespace cli = mongolock::cli;


BOOST_AUTO_TEST_SUITE(cli_args)

BOOST_AUTO_TEST_CASE(durations) {
  BOOST_TEST(cli::parse_duration("250ms")->count() == 250);
  BOOST_TEST(cli::parse_duration("10s")->count() == 10000);
  BOOST_TEST(cli::parse_duration("2m")->count() == 120000);
  BOOST_TEST(cli::parse_duration("1h")->count() == 3600000);
  BOOST_TEST(cli::parse_duration("0")->count() == 0);
  for (const char* bad : {"", "-1s", "1.", "0.0001", "5 ", "5x", "s", "10 s", "99999999999999999999h", "1m30", "1.s", ".5s",
                          "1..5s", "1.5.5s", "1s-1s", "0.5ms", "1.0001s", "m30s", "9999999999999999h"})
    BOOST_TEST(!cli::parse_duration(bad).has_value(), bad);
}

// A bare number is seconds, as flock -w and timeout(1) read it; only as the whole text ("1m30"
// stays refused).
BOOST_AUTO_TEST_CASE(a_bare_number_is_seconds) {
  BOOST_TEST(cli::parse_duration("5").value_or(std::chrono::milliseconds{-1}).count() == 5000);
  BOOST_TEST(cli::parse_duration("0.5").value_or(std::chrono::milliseconds{-1}).count() == 500);
  BOOST_TEST(cli::parse_duration("10").value_or(std::chrono::milliseconds{-1}).count() == 10000);
  BOOST_TEST(cli::parse_duration("0.001").value_or(std::chrono::milliseconds{-1}).count() == 1);
}

// As `timeout`, `sleep` and Go's ParseDuration: "1m30s", "1.5s". Sub-millisecond parts are refused
// rather than rounded.
BOOST_AUTO_TEST_CASE(compound_and_fractional_durations) {
  const std::vector<std::pair<const char*, std::int64_t>> cases{
      {"1m30s", 90'000}, {"1.5s", 1'500}, {"1h30m", 5'400'000}, {"0.25s", 250}, {"2.5m", 150'000},
      {"1h1m1s1ms", 3'661'001}, {"0.001s", 1}, {"1.50s", 1'500}, {"0s", 0}, {"8784h", 31'622'400'000}};
  for (const auto& [text, ms] : cases) BOOST_TEST_CONTEXT(text) {
      BOOST_TEST(cli::parse_duration(text).value_or(std::chrono::milliseconds{-1}).count() == ms);
    }
  BOOST_TEST(parse({"--ttl", "1m30s", "list"}).opts.ttl.count() == 90'000);
}

BOOST_AUTO_TEST_CASE(equals_form_and_short_options) {
  auto r = parse({"--uri=mongodb://h/?w=majority", "--ttl=10s", "--wait=1.5s", "--database=d", "--collection=c",
                  "--kill-after=1s", "run", "job", "--", "sh", "-c", "--ttl=1s"});
  BOOST_TEST(r.error.empty());
  BOOST_TEST(r.opts.uri == "mongodb://h/?w=majority");  // split at the first '=' only
  BOOST_TEST(r.opts.ttl.count() == 10'000);
  BOOST_TEST(r.opts.wait->count() == 1'500);
  BOOST_TEST(r.opts.database == "d");
  BOOST_TEST(r.opts.collection == "c");
  BOOST_TEST(r.opts.kill_after.count() == 1'000);
  BOOST_TEST(r.opts.argv == (std::vector<std::string>{"sh", "-c", "--ttl=1s"}));  // COMMAND is never parsed

  auto s = parse({"-w", "5s", "-t", "2m", "-q", "-v", "run", "job", "true"});
  BOOST_TEST(s.error.empty());
  BOOST_TEST(s.opts.wait->count() == 5'000);
  BOOST_TEST(s.opts.ttl.count() == 120'000);
  BOOST_TEST(s.opts.quiet);
  BOOST_TEST(s.opts.verbose);
  auto attached = parse({"-w0", "-t1m", "list"});  // as getopt: the value may follow the letter
  BOOST_TEST(attached.error.empty());
  BOOST_TEST(attached.opts.wait->count() == 0);
  BOOST_TEST(attached.opts.ttl.count() == 60'000);

  BOOST_TEST(parse({"--quiet=yes", "list"}).error == "--quiet takes no value");
  BOOST_TEST(parse({"-t", "25h", "list"}).error == "-t must be between 100ms and 24h");  // as the user spelt it
  BOOST_TEST(parse({"--ttl=25h", "list"}).error == "--ttl must be between 100ms and 24h");
  BOOST_TEST(!parse({"--bogus=1", "list"}).error.empty());
  BOOST_TEST(!parse({"-x", "list"}).error.empty());
}

// As flock(1) -E: the exit status when the lock is busy or --wait ran out (default 75).
BOOST_AUTO_TEST_CASE(conflict_exit_code) {
  BOOST_TEST(parse({"run", "job", "true"}).opts.conflict_exit_code == cli::exit_not_acquired);
  BOOST_TEST(parse({"-E", "3", "run", "job", "true"}).opts.conflict_exit_code == 3);
  BOOST_TEST(parse({"--conflict-exit-code=0", "list"}).opts.conflict_exit_code == 0);
  BOOST_TEST(parse({"--conflict-exit-code", "255", "list"}).opts.conflict_exit_code == 255);
  for (const char* bad : {"256", "-1", "x", "", "3x", "1e2"})
    BOOST_TEST(parse({"-E", bad, "list"}).error == "-E must be a number from 0 to 255", bad);
}

BOOST_AUTO_TEST_CASE(run_with_command_and_globals) {
  auto r = parse({"--uri", "mongodb://h/", "--ttl", "10s", "--wait", "0", "run", "job", "--", "sh", "-c", "echo --ttl"});
  BOOST_TEST(r.error.empty());
  BOOST_TEST((r.opts.cmd == cli::command::run));
  BOOST_TEST(r.opts.name == "job");
  BOOST_TEST(r.opts.ttl.count() == 10000);
  BOOST_TEST(r.opts.wait->count() == 0);
  BOOST_TEST(r.opts.argv == (std::vector<std::string>{"sh", "-c", "echo --ttl"}));
  auto no_dashes = parse({"run", "job", "ls", "-l"});
  BOOST_TEST(no_dashes.opts.argv == (std::vector<std::string>{"ls", "-l"}));
  BOOST_TEST(!no_dashes.opts.wait.has_value());  // default: wait forever
}

// flock(1)'s -c: one string for sh -c, in each spelling; not together with a COMMAND.
BOOST_AUTO_TEST_CASE(shell_command_with_c) {
  const std::vector<std::string> want{"sh", "-c", "make && ./deploy | tee log"};
  for (auto form : {std::vector<std::string>{"run", "job", "-c", "make && ./deploy | tee log"},
                    std::vector<std::string>{"run", "job", "--command", "make && ./deploy | tee log"},
                    std::vector<std::string>{"run", "job", "--command=make && ./deploy | tee log"},
                    std::vector<std::string>{"run", "job", "-cmake && ./deploy | tee log"},
                    std::vector<std::string>{"-w", "0", "run", "job", "-q", "-c", "make && ./deploy | tee log"}}) {
    auto r = parse(form);
    BOOST_TEST(r.error.empty(), r.error);
    BOOST_TEST(r.opts.argv == want);
  }
  BOOST_TEST(parse({"run", "job", "-c", "true", "extra"}).error.find("not both") != std::string::npos);
  BOOST_TEST(parse({"run", "job", "-c"}).error == "option -c needs a value");
  BOOST_TEST(parse({"run", "-c", "true", "job"}).error == "-c comes after the lock NAME");
  BOOST_TEST(parse({"run", "job", "--", "sh", "-c", "x"}).opts.argv == (std::vector<std::string>{"sh", "-c", "x"}));
}

BOOST_AUTO_TEST_CASE(environment_then_command_line) {
  auto r = parse({"status", "x"}, {{"MONGOLOCK_URI", "mongodb://env/"}, {"MONGOLOCK_COLLECTION", "c"}, {"MONGOLOCK_TTL", "2m"}});
  BOOST_TEST(r.opts.uri == "mongodb://env/");
  BOOST_TEST(r.opts.collection == "c");
  BOOST_TEST(r.opts.ttl.count() == 120000);
  auto o = parse({"--uri", "mongodb://flag/", "list"}, {{"MONGOLOCK_URI", "mongodb://env/"}});
  BOOST_TEST(o.opts.uri == "mongodb://flag/");
  BOOST_TEST(!parse({"list"}, {{"MONGOLOCK_WAIT", "soon"}}).error.empty());
}

BOOST_AUTO_TEST_CASE(usage_errors) {
  for (std::vector<std::string> bad : std::vector<std::vector<std::string>>{
           {}, {"run"}, {"run", "x"}, {"status"}, {"release", "x"}, {"list", "extra"}, {"--bogus", "list"},
           {"--ttl"}, {"--ttl", "fast", "list"}, {"launch", "x"}, {"status", "a", "b"}}) {
    BOOST_TEST(!parse(bad).error.empty());
  }
  auto ok = parse({"release", "--force", "x"});
  BOOST_TEST(ok.error.empty());
  BOOST_TEST(ok.opts.force);
  BOOST_TEST(!ok.opts.now);
  BOOST_TEST(parse({"release", "--force", "--now", "x"}).opts.now);
  BOOST_TEST(!parse({"run", "--now", "x", "true"}).error.empty());  // release's flag only
  BOOST_TEST((parse({"--help"}).opts.cmd == cli::command::help));
  BOOST_TEST((parse({"--version"}).opts.cmd == cli::command::version));
}

// Bounds are the library's own (limits::max_expiry, max_acquire_timeout) so the tool reports a
// usage error naming the flag instead of the library's "expiry ... [mongolock:8]" or, for
// --wait 9999999h, an overflowed deadline that times out at once.
BOOST_AUTO_TEST_CASE(durations_out_of_range_name_the_flag_and_the_limit) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--ttl", "9999999h", "list"}, "--ttl must be between 100ms and 24h"},
      {{"--ttl", "99ms", "list"}, "--ttl must be between 100ms and 24h"},
      {{"--ttl", "0", "list"}, "--ttl must be between 100ms and 24h"},
      {{"--ttl", "25h", "list"}, "--ttl must be between 100ms and 24h"},
      {{"--wait", "8785h", "list"}, "--wait must be between 0 and 8784h (366 days)"},
      {{"--wait", "9999999h", "list"}, "--wait must be between 0 and 8784h (366 days)"},
      {{"--kill-after", "61m", "list"}, "--kill-after must be between 0 and 1h"}};
  for (const auto& [args, message] : cases) BOOST_TEST_CONTEXT(args[0] << " " << args[1]) {
      BOOST_TEST(parse(args).error == message);
    }
  for (std::vector<std::string> ok : std::vector<std::vector<std::string>>{
           {"--ttl", "100ms", "list"}, {"--ttl", "24h", "list"}, {"--wait", "8784h", "list"},
           {"--wait", "0", "list"}, {"--kill-after", "1h", "list"}, {"--kill-after", "0", "list"}})
    BOOST_TEST(parse(ok).error.empty(), ok[0] << " " << ok[1]);
  BOOST_TEST((parse({"--ttl", "24h", "list"}).opts.ttl == mongolock::limits::max_expiry));
  BOOST_TEST((parse({"--wait", "8784h", "list"}).opts.wait == mongolock::limits::max_acquire_timeout));
}

// The margin is the clock-rate allowance (README's rule); it must stay below
// half of the lease, as the library requires, and the message names both flags.
BOOST_AUTO_TEST_CASE(margin_is_an_option_below_half_of_the_ttl) {
  BOOST_TEST(parse({"--ttl", "4s", "--margin", "1s", "list"}).opts.margin.count() == 1'000);
  BOOST_TEST(parse({"list"}, {{"MONGOLOCK_MARGIN", "250ms"}}).opts.margin.count() == 250);
  BOOST_TEST(parse({"list"}).opts.margin.count() == 0, "0: the library's ttl / 10");
  BOOST_TEST(parse({"--ttl", "4s", "--margin", "2s", "list"}).error == "--margin 2s must be below half of --ttl 4s");
  BOOST_TEST(parse({"--margin", "13h", "list"}).error == "--margin must be between 0 and 12h");
  BOOST_TEST(parse({"--ttl=1s", "--margin=499ms", "list"}).error.empty());
}

// --once-per D keeps two runs D apart (docs/design.md section 13), so one period's attempts must
// all fall within D: a host that waits in line longer than D saw the running job's token more than
// D before it was handed the lock, and ran it again (--wait 20s --once-per 2s: two runs a night).
// The tool knows --wait: D must exceed it, and --wait must be given (an unbounded wait has no D).
BOOST_AUTO_TEST_CASE(once_per_must_exceed_the_wait) {
  BOOST_TEST(parse({"--wait", "20s", "run", "--once-per", "2s", "n", "true"}).error ==
             "--once-per 2s must exceed --wait 20s: a host that waits in line longer than D can run the job "
             "again in the same period; give D above --wait plus the spread of the hosts' start times");
  BOOST_TEST(parse({"--wait", "5m", "run", "--once-per", "5m", "n", "true"}).error.find(
                 "--once-per 5m must exceed --wait 5m") == 0);
  BOOST_TEST(parse({"run", "--once-per", "3s", "n", "true"}, {{"MONGOLOCK_WAIT", "5m"}}).error.find(
                 "--once-per 3s must exceed --wait 5m") == 0);
  BOOST_TEST(parse({"run", "--once-per", "20h", "n", "true"}).error ==
             "--once-per 20h needs --wait: a host that waits without bound can run the job again in the same "
             "period, whatever D; give --wait below D less the spread of the hosts' start times");
  for (std::vector<std::string> ok : std::vector<std::vector<std::string>>{
           {"--wait", "10s", "run", "--once-per", "20s", "n", "true"},
           {"--wait", "5m", "run", "--once-per", "20h", "n", "true"},
           {"--wait", "0", "run", "--once-per", "1s", "n", "true"},
           {"--wait", "5m", "run", "--once-per", "5m1ms", "n", "true"},
           {"run", "n", "true"}})  // no --once-per: no --wait needed
    BOOST_TEST(parse(ok).error.empty(), parse(ok).error);
  BOOST_TEST(cli::usage().find("must exceed --wait") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(environment_durations_out_of_range) {
  BOOST_TEST(parse({"list"}, {{"MONGOLOCK_TTL", "9999999h"}}).error == "MONGOLOCK_TTL must be between 100ms and 24h");
  BOOST_TEST(parse({"list"}, {{"MONGOLOCK_WAIT", "9000h"}}).error ==
             "MONGOLOCK_WAIT must be between 0 and 8784h (366 days)");
  BOOST_TEST(parse({"list"}, {{"MONGOLOCK_KILL_AFTER", "2h"}}).error == "MONGOLOCK_KILL_AFTER must be between 0 and 1h");
  // An out-of-range environment value is still an error when the flag would override it: the
  // environment is read first and reports what is wrong with it.
  BOOST_TEST(parse({"--ttl", "10s", "list"}, {{"MONGOLOCK_TTL", "50ms"}}).error ==
             "MONGOLOCK_TTL must be between 100ms and 24h");
}

// Every failure has its documented exit status; authentication is 77 (was 70).
BOOST_AUTO_TEST_CASE(failures_map_to_their_documented_exit_codes) {
  using mongolock::errc;
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::not_authorized)) == 77);
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::server_unavailable)) == 69);
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::unsupported_server)) == 69);
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::busy)) == 75);
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::timeout), 9) == 9);  // -E 9
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::invalid_name)) == 64);
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::declaration_mismatch)) == 64);
  BOOST_TEST(cli::exit_code_for(make_error_code(errc::server_error)) == 70);
}

// run's kinds of lock (docs/design.md section 10): -n N for a semaphore's permit, --shared /
// --exclusive for a rw_lock's reader or writer, --readers R; one kind at a time, numbers in 1..64.
BOOST_AUTO_TEST_CASE(run_takes_a_semaphore_permit_or_a_side_of_a_rw_lock) {
  auto permit = parse({"run", "-n", "3", "jobs", "--", "true"});
  BOOST_TEST(permit.error == "");
  BOOST_TEST(permit.opts.permits == 3);
  BOOST_TEST(permit.opts.name == "jobs");
  BOOST_TEST(parse({"run", "--permits=5", "jobs", "true"}).opts.permits == 5);
  BOOST_TEST(parse({"run", "-n7", "jobs", "true"}).opts.permits == 7);
  auto reader = parse({"run", "--shared", "--readers", "4", "cfg", "cat", "f"});
  BOOST_TEST(reader.error == "");
  BOOST_TEST(reader.opts.shared);
  BOOST_TEST(reader.opts.readers == 4);
  BOOST_TEST((reader.opts.argv == std::vector<std::string>{"cat", "f"}));
  auto writer = parse({"run", "--exclusive", "cfg", "--", "-n", "2"});  // after NAME: COMMAND's own
  BOOST_TEST(writer.error == "");
  BOOST_TEST(writer.opts.exclusive);
  BOOST_TEST(writer.opts.readers == 16);
  BOOST_TEST(writer.opts.permits == 0);
  BOOST_TEST((writer.opts.argv == std::vector<std::string>{"-n", "2"}));
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"run", "-n", "0", "j", "true"}, "-n must be a number from 1 to 64"},
      {{"run", "-n", "65", "j", "true"}, "-n must be a number from 1 to 64"},
      {{"run", "--permits", "two", "j", "true"}, "--permits must be a number from 1 to 64"},
      {{"run", "--readers", "-1", "j", "true"}, "--readers must be a number from 1 to 64"},
      {{"run", "-n", "2", "--shared", "j", "true"}, "give one of -n, --shared and --exclusive"},
      {{"run", "--shared", "--exclusive", "j", "true"}, "give one of -n, --shared and --exclusive"},
      {{"run", "--shared=yes", "j", "true"}, "--shared takes no value"},
      {{"run", "j", "-n"}, "option -n needs a value"},
      {{"run", "--readers", "4", "j", "true"}, "--readers goes with --shared or --exclusive"},
  };
  for (const auto& [args, error] : bad) BOOST_TEST(parse(args).error == error, error);
}

// Found by fuzz/lock_doc_fuzz.cpp: a host, label or owner written by something else passed through
// as invalid UTF-8, so `status --json` printed invalid JSON.
BOOST_AUTO_TEST_CASE(status_json_replaces_invalid_utf8_from_the_document) {
  mongolock::lock_info i;
  i.name = "jobs";
  i.exists = i.held = true;
  i.owner = "x\xFFy";
  i.host = "h\xC3";            // truncated
  i.label = "caf\xC3\xA9 \"q\"";  // valid: kept, quotes escaped
  const auto json = mongolock::cli::to_json(i, 0);
  BOOST_TEST(json.find("\"owner\":\"x\\ufffdy\"") != std::string::npos, json);
  BOOST_TEST(json.find("\"host\":\"h\\ufffd\"") != std::string::npos, json);
  BOOST_TEST(json.find("\"label\":\"caf\xC3\xA9 \\\"q\\\"\"") != std::string::npos, json);
}

// Fencing tokens are above 2^53: a reader that parses JSON numbers as doubles (jq 1.6, any
// JavaScript client) rounds them (771171415335370754 reads as ...370800). The token also comes
// as a string, exact in any reader; the heartbeat, a random value to compare, only as a string.
BOOST_AUTO_TEST_CASE(status_json_gives_the_token_as_a_string_too) {
  mongolock::lock_info i;
  i.name = "jobs";
  i.exists = i.held = true;
  i.fencing_token = 771171415335370754;
  i.heartbeat = 9007199254740993;  // 2^53 + 1: not a double
  const auto json = mongolock::cli::to_json(i, 0);
  BOOST_TEST(json.find(",\"fencing_token\":771171415335370754,\"fencing_token_str\":\"771171415335370754\",") !=
                 std::string::npos,
             json);
  BOOST_TEST(json.find(",\"heartbeat\":\"9007199254740993\",") != std::string::npos, json);
}

// An election's lock shows its leader's value; a plain lock, null.
BOOST_AUTO_TEST_CASE(status_json_shows_an_election_leaders_value) {
  mongolock::lock_info i;
  i.name = "scheduler";
  i.exists = i.held = true;
  i.owner = "0123456789abcdef0123456789abcdef";
  i.value = "10.0.0.7:8080";
  BOOST_TEST(mongolock::cli::to_json(i, 0).find(",\"value\":\"10.0.0.7:8080\"}") != std::string::npos);
  i.value.clear();
  BOOST_TEST(mongolock::cli::to_json(i, 0).find(",\"value\":null}") != std::string::npos);
}

// Found by fuzz/lock_doc_fuzz.cpp (UBSan): renewed_at is whatever the document says, so "now -
// renewed_at" overflowed for a date near the int64 limits. It saturates.
BOOST_AUTO_TEST_CASE(status_json_survives_dates_at_the_int64_limits) {
  mongolock::lock_info i;
  i.name = "jobs";
  i.exists = i.held = true;
  i.renewed_at_ms = std::numeric_limits<std::int64_t>::min();
  i.acquired_at_ms = std::numeric_limits<std::int64_t>::max();
  const auto json = mongolock::cli::to_json(i, 1795348800000);
  BOOST_TEST(json.find("\"holder_silent_ms\":9223372036854775807") != std::string::npos, json);
}

BOOST_AUTO_TEST_SUITE_END()

// mongolock fence (docs/cli.md "Fenced writes"): the token from --token or the environment `run`
// sets, the documents as positional arguments, and the usage errors of each shape.
BOOST_AUTO_TEST_SUITE(cli_fence)

BOOST_AUTO_TEST_CASE(fence_takes_the_token_from_run_or_from_the_flag) {
  auto r = parse({"fence", "app.reports", R"({"_id": 1})", R"({"$set": {"v": 2}})"},
                 {{"MONGOLOCK_FENCING_TOKEN", "1700000000000000123"}});
  BOOST_TEST(r.error.empty(), r.error);
  BOOST_TEST((r.opts.cmd == cli::command::fence));
  BOOST_TEST(r.opts.fencing_token == 1700000000000000123);
  BOOST_TEST(r.opts.name == "app.reports");
  BOOST_TEST(r.opts.argv.size() == 2u);
  r = parse({"fence", "--token=42", "--field", "epoch", "--upsert", "--replace", "a.b", "{}", "{}"},
            {{"MONGOLOCK_FENCING_TOKEN", "7"}});
  BOOST_TEST(r.error.empty(), r.error);
  BOOST_TEST(r.opts.fencing_token == 42);  // the flag wins
  BOOST_TEST(r.opts.fence_field == "epoch");
  BOOST_TEST((r.opts.upsert && r.opts.replace && !r.opts.remove));
  r = parse({"fence", "--delete", "--token", "5", "a.b", R"({"_id": 1})"});
  BOOST_TEST(r.error.empty(), r.error);
  BOOST_TEST(r.opts.remove);
  // Tokens past the token clock's cap are a take's too (docs/design.md section 1): `run` hands
  // them out, and fence takes them, up to the largest int64.
  for (const std::string t : {"6917529027641081857", "9223372036854775807"}) {
    r = parse({"fence", "--token", t, "a.b", "{}", "{}"});
    BOOST_TEST(r.error.empty(), r.error);
    BOOST_TEST(std::to_string(r.opts.fencing_token) == t);
    r = parse({"fence", "a.b", "{}", "{}"}, {{"MONGOLOCK_FENCING_TOKEN", t}});
    BOOST_TEST(r.error.empty(), r.error);
    BOOST_TEST(std::to_string(r.opts.fencing_token) == t);
  }
  // A bad MONGOLOCK_FENCING_TOKEN (a nested run's, say) troubles no other command.
  BOOST_TEST(parse({"status", "x"}, {{"MONGOLOCK_FENCING_TOKEN", "junk"}}).error.empty());
}

BOOST_AUTO_TEST_CASE(fence_usage_errors_say_what_is_missing) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"fence", "a.b", "{}", "{}"}, "needs a token"},
      {{"fence", "--token", "0", "a.b", "{}", "{}"}, "positive integer"},
      {{"fence", "--token", "-3", "a.b", "{}", "{}"}, "positive integer"},
      {{"fence", "--token", "12x", "a.b", "{}", "{}"}, "positive integer"},
      {{"fence", "--token", "9223372036854775808", "a.b", "{}", "{}"}, "positive integer"},
      {{"fence", "--token", "1", "ab", "{}", "{}"}, "DB.COLLECTION"},
      {{"fence", "--token", "1", "a.b", "{}"}, "needs an UPDATE"},
      {{"fence", "--token", "1", "a.b"}, "needs a FILTER"},
      {{"fence", "--token", "1", "--delete", "a.b", "{}", "{}"}, "takes no UPDATE"},
      {{"fence", "--token", "1", "--delete", "--replace", "a.b", "{}"}, "one of --replace and --delete"},
      {{"fence", "--token", "1", "a.b", "{}", "{}", "{}"}, "not '{}'"},
      {{"fence", "--upsert=yes", "a.b", "{}", "{}"}, "takes no value"},
  };
  for (const auto& [args, expected] : cases) {
    const auto r = parse(args);
    BOOST_TEST(r.error.find(expected) != std::string::npos, "'" << r.error << "' should say '" << expected << "'");
  }
  const auto junk = parse({"fence", "a.b", "{}", "{}"}, {{"MONGOLOCK_FENCING_TOKEN", "junk"}});
  BOOST_TEST(junk.error.find("MONGOLOCK_FENCING_TOKEN") != std::string::npos, junk.error);
}

BOOST_AUTO_TEST_CASE(fence_failures_map_to_their_documented_exit_codes) {
  namespace ml = mongolock;
  BOOST_TEST(cli::exit_code_for(make_error_code(ml::errc::fenced_out)) == 76);
  BOOST_TEST(cli::exit_code_for(make_error_code(ml::errc::invalid_document)) == 64);
  BOOST_TEST(cli::exit_code_for(make_error_code(ml::errc::invalid_collection)) == 64);
  BOOST_TEST(cli::exit_code_for(make_error_code(ml::errc::invalid_options)) == 64);
  BOOST_TEST(cli::exit_code_for(make_error_code(ml::errc::server_unavailable)) == 69);
}

BOOST_AUTO_TEST_SUITE_END()
