// prometheus_text() over a hand-made snapshot: every line a scraper parses (text exposition
// format 0.0.4), checked exactly.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mongolock/metrics.hpp"

namespace ml = mongolock;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

bool has_line(const std::vector<std::string>& lines, const std::string& want) {
  for (const auto& l : lines)
    if (l == want) return true;
  return false;
}

ml::stats sample_stats() {
  ml::stats s;
  s.acquisitions = 7;
  s.failed_attempts = 2;
  s.busy_observations = 5;
  s.renewals = 11;
  s.renewal_errors = 1;
  s.losses = 3;
  s.losses_at_deadline = 1;
  s.losses_taken_over = 2;
  s.releases = 6;
  s.server_calls = 40;
  s.leases_held = 1;
  s.acquires_in_progress = 4;
  s.wait_histogram = {2, 3, 0, 1, 1, 0};  // <= 1 ms, <= 10 ms, ..., > 10 s
  s.wait_time = 2'500'000'000ns;           // 2.5 s
  s.renewal_histogram = {5, 4, 2, 0, 0, 0, 1};
  s.renewal_time = 3'250'000ns;  // 3.25 ms
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(metrics)

BOOST_AUTO_TEST_CASE(counters_and_gauges_have_help_type_and_value) {
  const auto text = ml::prometheus_text(sample_stats());
  BOOST_TEST(text.back() == '\n');
  const auto lines = lines_of(text);
  for (const char* want : {
           "# HELP mongolock_acquisitions_total Successful acquires.",
           "# TYPE mongolock_acquisitions_total counter",
           "mongolock_acquisitions_total 7",
           "mongolock_failed_attempts_total 2",
           "mongolock_busy_observations_total 5",
           "mongolock_renewals_total 11",
           "mongolock_renewal_errors_total 1",
           "# TYPE mongolock_lease_losses_total counter",
           "mongolock_lease_losses_total{cause=\"deadline\"} 1",
           "mongolock_lease_losses_total{cause=\"taken_over\"} 2",
           "mongolock_releases_total 6",
           "mongolock_server_calls_total 40",
           "# TYPE mongolock_leases_held gauge",
           "mongolock_leases_held 1",
           "# TYPE mongolock_acquires_in_progress gauge",
           "mongolock_acquires_in_progress 4",
       })
    BOOST_TEST(has_line(lines, want), "missing: " << want << "\n" << text);
}

// Buckets are cumulative, in seconds; +Inf and _count are the number of observations; _sum is
// in seconds.
BOOST_AUTO_TEST_CASE(histograms_are_cumulative_in_seconds) {
  const auto lines = lines_of(ml::prometheus_text(sample_stats()));
  const std::vector<std::string> wait = {
      "# TYPE mongolock_acquire_wait_seconds histogram",
      "mongolock_acquire_wait_seconds_bucket{le=\"0.001\"} 2",
      "mongolock_acquire_wait_seconds_bucket{le=\"0.01\"} 5",
      "mongolock_acquire_wait_seconds_bucket{le=\"0.1\"} 5",
      "mongolock_acquire_wait_seconds_bucket{le=\"1\"} 6",
      "mongolock_acquire_wait_seconds_bucket{le=\"10\"} 7",
      "mongolock_acquire_wait_seconds_bucket{le=\"+Inf\"} 7",
      "mongolock_acquire_wait_seconds_sum 2.5",
      "mongolock_acquire_wait_seconds_count 7",
  };
  // In this order, one after another (a histogram's samples stay together).
  auto at = std::find(lines.begin(), lines.end(), wait.front());
  BOOST_REQUIRE(at != lines.end());
  ++at;  // past # TYPE
  for (std::size_t i = 1; i < wait.size(); ++i, ++at) {
    BOOST_REQUIRE(at != lines.end());
    BOOST_TEST(*at == wait[i]);
  }
  for (const char* want : {
           "# TYPE mongolock_renewal_seconds histogram",
           "mongolock_renewal_seconds_bucket{le=\"0.001\"} 5",
           "mongolock_renewal_seconds_bucket{le=\"0.005\"} 9",
           "mongolock_renewal_seconds_bucket{le=\"0.025\"} 11",
           "mongolock_renewal_seconds_bucket{le=\"2.5\"} 11",
           "mongolock_renewal_seconds_bucket{le=\"+Inf\"} 12",
           "mongolock_renewal_seconds_sum 0.00325",
           "mongolock_renewal_seconds_count 12",
       })
    BOOST_TEST(has_line(lines, want), "missing: " << want);
}

// Each family has exactly one # HELP and one # TYPE, before its samples; every sample line is
// "name[{labels}] value" with a name of the family.
BOOST_AUTO_TEST_CASE(each_family_is_declared_once_before_its_samples) {
  const auto lines = lines_of(ml::prometheus_text(ml::stats{}));
  std::set<std::string> helped, typed;
  std::string current;
  for (const auto& l : lines) {
    std::istringstream in(l);
    std::string first, name, rest;
    in >> first;
    if (first == "#") {
      std::string kind;
      in >> kind >> name;
      BOOST_TEST((kind == "HELP" || kind == "TYPE"), l);
      BOOST_TEST((kind == "HELP" ? helped : typed).insert(name).second, "declared twice: " << l);
      current = name;
      continue;
    }
    BOOST_TEST(first.rfind(current, 0) == 0u, "sample outside its family: " << l);
    in >> rest;
    BOOST_TEST(!rest.empty(), "no value: " << l);
  }
  BOOST_TEST(helped == typed);
  BOOST_TEST(helped.size() == 12u);
}

// A prefix is made a valid metric name, never trusted as one; an empty one gives bare names.
BOOST_AUTO_TEST_CASE(prefix_is_sanitised) {
  const auto text = ml::prometheus_text(ml::stats{}, "9 app-locks");
  BOOST_TEST(text.find("\n_9_app_locks_acquisitions_total 0\n") != std::string::npos, text);
  BOOST_TEST(ml::prometheus_text(ml::stats{}, "").find("\nacquisitions_total 0\n") != std::string::npos);
  const std::string odd("a\0b\n{\"}", 7);
  BOOST_TEST(ml::prometheus_text(ml::stats{}, odd).find("\na_b_____acquisitions_total 0\n") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
