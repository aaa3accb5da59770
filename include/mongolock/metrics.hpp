#pragma once
// A provider's stats as text a metrics scraper reads: the Prometheus text exposition format,
// version 0.0.4, which OpenTelemetry's Prometheus receiver also reads. Formatting only: the
// counters are the ones snapshot() already keeps, so serving this costs nothing between scrapes.
#include <string>
#include <string_view>

#include "mongolock/stats.hpp"

namespace mongolock {

// The Content-Type of a response that carries prometheus_text().
inline constexpr std::string_view prometheus_content_type = "text/plain; version=0.0.4; charset=utf-8";

// Every family with its # HELP and # TYPE lines, names starting with `prefix` and '_':
//   PREFIX_acquisitions_total, _failed_attempts_total, _busy_observations_total, _renewals_total,
//   _renewal_errors_total, _releases_total, _server_calls_total             counters
//   PREFIX_lease_losses_total{cause="deadline"|"taken_over"}                 counter
//   PREFIX_leases_held, PREFIX_acquires_in_progress                         gauges
//   PREFIX_acquire_wait_seconds, PREFIX_renewal_seconds                      histograms (le in seconds)
// A prefix character that a metric name may not hold becomes '_' (and a leading digit gets one
// before it); an empty prefix gives the bare names. To tell several providers apart, give each
// its own prefix or let the scraper add a label.
std::string prometheus_text(const stats& s, std::string_view prefix = "mongolock");

}  // namespace mongolock
