// ---- Scenario 7: leader election failover after SIGKILL ----------------------------------------
#include <algorithm>

#include "common.hpp"
#include "election.hpp"
#include "scenarios.hpp"
#include "stats.hpp"

namespace bench {

void scenario_election(const config& c) {
  const int expiry_ms = 1000, margin_ms = 100, renew_ms = 333;  // lock_options defaults for a 1 s expiry
  auto r = bench::election_failover(c.self, c.uri, c.out, 3, 8, expiry_ms);
  // Waiting candidates count the dead leader's silence from its last renewal, up to renew_every
  // before the kill: a new leader is due between E + m - renew_every and E + m after the kill,
  // plus the first in line's polling and the campaign's two commands.
  print(row{"7 election failover"}.num("candidates", 3).num("kills", static_cast<double>(r.failover_ms.size()))
            .num("expiry_ms", expiry_ms).num("failover_median_ms", bench::percentile(r.failover_ms, .5))
            .num("failover_max_ms", r.failover_ms.empty() ? 0 : *std::max_element(r.failover_ms.begin(), r.failover_ms.end()))
            .num("window_min_ms", expiry_ms + margin_ms - renew_ms).num("window_max_ms", expiry_ms + margin_ms)
            .num("ratio_median_to_window_max", bench::percentile(r.failover_ms, .5) / (expiry_ms + margin_ms))
            // Terms are tokens: they rise at every new leader, by the clock's reading or one
            // (docs/design.md section 1), never consecutively by design; > 0 is the property.
            .num("min_term_gap", r.terms_gap.empty() ? 0 : *std::min_element(r.terms_gap.begin(), r.terms_gap.end())));
}

}  // namespace bench
