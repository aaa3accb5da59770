// The mongolock tool's scheduled jobs: --hold-at-least and --once-per on the command line, and what
// a host remembers of a lock's runs (sightings.hpp, docs/design.md section 13).
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "args.hpp"
#include "json.hpp"
#include "sightings.hpp"

using namespace std::chrono_literals;
namespace cli = mongolock::cli;

BOOST_AUTO_TEST_SUITE(cli_scheduled)

BOOST_AUTO_TEST_CASE(hold_at_least_and_once_per_are_durations_of_a_plain_run) {
  auto r = cli::parse_args({"--wait", "5m", "run", "--once-per", "20h", "--hold-at-least=10m", "--state-dir", "/s", "n", "true"}, {});
  BOOST_TEST(r.error.empty(), r.error);
  BOOST_TEST(r.opts.once_per == 20h);
  BOOST_TEST(r.opts.hold_at_least == 10min);
  BOOST_TEST(r.opts.state_dir == "/s");
  BOOST_TEST(r.opts.argv == std::vector<std::string>{"true"});
  r = cli::parse_args({"run", "n", "true"}, {{"MONGOLOCK_STATE_DIR", "/from/env"}});
  BOOST_TEST(r.opts.state_dir == "/from/env");
  BOOST_TEST(r.opts.once_per.count() == 0);
  BOOST_TEST(r.opts.hold_at_least.count() == 0);
  BOOST_TEST(cli::parse_args({"run", "--once-per", "x", "n", "true"}, {}).error.find("invalid duration for --once-per") == 0);
  BOOST_TEST(cli::parse_args({"run", "--once-per", "21h", "n", "true"}, {}).error == "--once-per must be between 0 and 20h");
  BOOST_TEST(cli::parse_args({"run", "--hold-at-least", "21h", "n", "true"}, {}).error.empty());
  for (const char* kind : {"-n", "--shared", "--exclusive"}) {
    std::vector<std::string> args{"run", "--once-per", "1h", kind};
    if (std::string(kind) == "-n") args.push_back("2");
    args.insert(args.end(), {"n", "true"});
    BOOST_TEST(cli::parse_args(args, {}).error.find("go with a plain lock") != std::string::npos, kind);
  }
  BOOST_TEST(cli::exit_skipped == 79);
  BOOST_TEST(cli::usage().find("79") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_run_began_before_the_first_sighting_of_its_token_or_a_later_one) {
  cli::sightings s{"boot", {}};
  BOOST_TEST(!cli::began_at_least(s, 5, 1000).has_value(), "nothing seen: new to this host");
  cli::note(s, 5, 1000);
  cli::note(s, 5, 2000);  // seen again: the first sighting stands
  cli::note(s, 9, 3000);
  BOOST_TEST(s.seen.size() == 2u);
  BOOST_TEST(cli::began_at_least(s, 5, 4000)->count() == 3000);
  BOOST_TEST(cli::began_at_least(s, 4, 4000)->count() == 3000, "a token seen later than a run's bounds it too");
  BOOST_TEST(cli::began_at_least(s, 7, 4000)->count() == 1000, "only token 9, seen at 3000, bounds run 7");
  BOOST_TEST(!cli::began_at_least(s, 10, 4000).has_value());
  for (std::int64_t t = 10; t < 40; ++t) cli::note(s, t, 3000 + t);
  BOOST_TEST(s.seen.size() == cli::max_sightings, "the oldest sightings go first");
  BOOST_TEST(s.seen.back().token == 39);
  // Tokens went back (restored or wiped documents): old sightings would date new runs by old ones.
  cli::note(s, 12, 9000);
  BOOST_TEST(s.seen == (std::vector<cli::sighting>{{12, 9000}}));
  BOOST_TEST(cli::began_at_least(s, 5, 9500)->count() == 500);
}

BOOST_AUTO_TEST_CASE(sightings_of_another_boot_or_a_damaged_file_are_forgotten) {
  cli::sightings s{"boot-a", {}};
  cli::note(s, 5, 1000);
  cli::note(s, 7, 2000);
  const auto text = cli::serialize(s);
  BOOST_TEST(cli::parse(text, "boot-a").seen == s.seen);
  BOOST_TEST(cli::parse(text, "boot-b").seen.empty(), "the boot clock restarted: its times mean nothing now");
  BOOST_TEST(cli::parse(text, "").seen.empty());
  for (const char* damaged : {"", "mongolock-sightings 2\nboot boot-a\n5 1000\n", "mongolock-sightings 1\nboot boot-a\n5\n",
                              "mongolock-sightings 1\nboot boot-a\n5 1000 7\n", "mongolock-sightings 1\nboot boot-a\n7 1000\n5 2000\n",
                              "mongolock-sightings 1\nboot boot-a\n5 2000\n7 1000\n", "mongolock-sightings 1\nboot boot-a\n-5 1000\n"})
    BOOST_TEST(cli::parse(damaged, "boot-a").seen.empty(), damaged);
}

BOOST_AUTO_TEST_CASE(sightings_are_kept_in_one_file_per_lock_under_the_state_directory) {
  const auto path = [](std::string uri, std::string db, std::string coll, std::string name) {
    return cli::sightings_path("/s", uri, db, coll, name);
  };
  const auto p = path("mongodb://h1,h2/?replicaSet=rs0", "db", "locks", "nightly report/2");
  BOOST_TEST(p.starts_with("/s/"));
  BOOST_TEST(p.ends_with(".db.locks.nightly%20report%2F2"), p);
  BOOST_TEST(path("mongodb://a", "db", "a.b", "c") != path("mongodb://a", "db", "a", "b.c"), "dots are escaped");
  BOOST_TEST(path("mongodb://prod", "db", "c", "n") != path("mongodb://staging", "db", "c", "n"), "one file per cluster");
  BOOST_TEST(path("mongodb://u:secret@h/", "db", "c", "n") == path("mongodb://h/", "db", "c", "n"),
             "the credentials are not part of it");
  BOOST_TEST(path("mongodb://u:secret@h/", "db", "c", "n").find("secret") == std::string::npos);
  BOOST_TEST(path("mongodb://a", "db", "c", std::string(300, 'x')).size() < 3 + 255);
  BOOST_TEST(cli::state_dir_of("/given") == "/given");
  const auto dir = std::filesystem::temp_directory_path() / ("sightings-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto file = cli::sightings_path((dir / "a/b").string(), "mongodb://h", "db", "c", "job");
  std::string error;
  auto first = cli::note_in_file(file, 5, 1000, error);
  BOOST_REQUIRE_MESSAGE(first, error);
  BOOST_TEST(first->seen.size() == 1u);
  auto second = cli::note_in_file(file, 9, 2000, error);
  BOOST_REQUIRE(second);
  BOOST_TEST(second->seen.size() == 2u, "the first note was kept in the file");
  BOOST_TEST(cli::began_at_least(*second, 5, 2500)->count() == 1500);
  const bool private_dir = (std::filesystem::status(dir / "a").permissions() & std::filesystem::perms::others_all) ==
                           std::filesystem::perms::none;
  BOOST_TEST(private_dir, "what a host has seen is nobody else's business");
  // A directory others can write to is refused (they could plant a file or a link there).
  std::filesystem::permissions(dir / "a/b", std::filesystem::perms::others_write, std::filesystem::perm_options::add);
  error.clear();
  BOOST_TEST(!cli::note_in_file(file, 11, 3000, error).has_value());
  BOOST_TEST(error.find("nobody else can write") != std::string::npos, error);
  std::filesystem::permissions(dir / "a/b", std::filesystem::perms::others_write, std::filesystem::perm_options::remove);
  // A link planted in place of the file is not followed.
  const auto target = dir / "target";
  { std::ofstream(target) << "keep"; }
  std::filesystem::remove(file);
  std::filesystem::create_symlink(target, file);
  error.clear();
  BOOST_TEST(!cli::note_in_file(file, 12, 4000, error).has_value());
  std::string kept;
  std::getline(std::ifstream(target), kept);
  BOOST_TEST(kept == "keep");
  std::filesystem::remove_all(dir);
  BOOST_TEST(!cli::note_in_file("/proc/no-such-dir/x", 1, 1, error).has_value());
  BOOST_TEST(!error.empty());
}

BOOST_AUTO_TEST_CASE(status_json_shows_the_last_recorded_run) {
  mongolock::lock_info i;
  i.name = "n";
  i.exists = true;
  BOOST_TEST(cli::to_json(i, 0).find("\"last_run_token_str\":null") != std::string::npos);
  i.last_completed_token = 4294967297;
  BOOST_TEST(cli::to_json(i, 0).find("\"last_run_token_str\":\"4294967297\"") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
