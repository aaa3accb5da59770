#include "mongolock/metrics.hpp"

#include <charconv>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <span>

namespace mongolock {
namespace {

// The shortest text that reads back as `v` ("0.001", "10", "2.5e-07"): what le labels and sums
// need; a fixed precision would print 0.001 as 0.00100000000000000002.
std::string number(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// Metric names are [a-zA-Z_:][a-zA-Z0-9_:]* (the exposition format's rule).
std::string name_prefix(std::string_view prefix) {
  if (prefix.empty()) return "";
  std::string out;
  if (prefix.front() >= '0' && prefix.front() <= '9') out += '_';
  for (const char c : prefix) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
    out += ok ? c : '_';
  }
  return out + "_";
}

class writer {
 public:
  explicit writer(std::string prefix) : prefix_(std::move(prefix)) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP " + prefix_ + std::string(name) + " " + std::string(help) + "\n";
    out_ += "# TYPE " + prefix_ + std::string(name) + " " + std::string(type) + "\n";
  }
  void sample(std::string_view name, std::string_view labels, const std::string& value) {
    out_ += prefix_ + std::string(name) + std::string(labels) + " " + value + "\n";
  }
  void counter(std::string_view name, std::string_view help, std::uint64_t v) {
    family(name, "counter", help);
    sample(name, "", std::to_string(v));
  }
  void gauge(std::string_view name, std::string_view help, std::uint64_t v) {
    family(name, "gauge", help);
    sample(name, "", std::to_string(v));
  }
  // `counts[i]` counts observations up to bounds[i] (over the bound before); the last one, the
  // rest. Prometheus buckets are cumulative, and +Inf is the count.
  template <class Bound>
  void histogram(std::string_view name, std::string_view help, std::span<const Bound> bounds,
                 std::span<const std::uint64_t> counts, std::chrono::nanoseconds sum) {
    family(name, "histogram", help);
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds.size() && i < counts.size(); ++i) {
      cumulative += counts[i];
      sample(bucket, "{le=\"" + number(seconds(bounds[i])) + "\"}", std::to_string(cumulative));
    }
    const auto count = std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
    sample(bucket, "{le=\"+Inf\"}", std::to_string(count));
    sample(std::string(name) + "_sum", "", number(seconds(sum)));
    sample(std::string(name) + "_count", "", std::to_string(count));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string prefix_;
  std::string out_;
};

}  // namespace

std::string prometheus_text(const stats& s, std::string_view prefix) {
  writer w(name_prefix(prefix));
  w.counter("acquisitions_total", "Successful acquires.", s.acquisitions);
  w.counter("failed_attempts_total", "Compare-and-swaps lost to another owner.", s.failed_attempts);
  w.counter("busy_observations_total", "Reads that found the lock held while waiting.", s.busy_observations);
  w.counter("renewals_total", "Successful lease renewals.", s.renewals);
  w.counter("renewal_errors_total", "Lease renewals that failed and were retried.", s.renewal_errors);
  w.family("lease_losses_total", "counter",
           "Leases lost: deadline = no renewal succeeded before the local deadline, taken_over = a renewal "
           "found another owner (a takeover or a force release).");
  w.sample("lease_losses_total", "{cause=\"deadline\"}", std::to_string(s.losses_at_deadline));
  w.sample("lease_losses_total", "{cause=\"taken_over\"}", std::to_string(s.losses_taken_over));
  w.counter("releases_total", "Leases released by their owner.", s.releases);
  w.counter("server_calls_total", "Commands sent to the server (a renewal batch or a grouped command counts once).", s.server_calls);
  w.gauge("leases_held", "Leases of this provider held now.", s.leases_held);
  w.gauge("acquires_in_progress", "Acquire operations started and not completed.", s.acquires_in_progress);
  w.histogram<std::chrono::milliseconds>("acquire_wait_seconds", "Time from acquire start to grant, of successful acquires.",
                                         stats::wait_bucket_bounds, s.wait_histogram, s.wait_time);
  w.histogram<std::chrono::milliseconds>("renewal_seconds", "Round trip of renewal commands, answered or failed.",
                                         stats::renewal_bucket_bounds, s.renewal_histogram, s.renewal_time);
  return w.take();
}

}  // namespace mongolock
