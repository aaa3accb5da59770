#pragma once
// Zipf(s) over 0 .. n - 1, by inverting its cumulative weights: one table, drawn from with as many
// generators as there are requests (scenario 9's ids, mongolock-model's).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace bench {

class zipf_table {
 public:
  zipf_table(int n, double s) {
    double sum = 0;
    for (int i = 1; i <= n; ++i) cumulative_.push_back(sum += 1.0 / std::pow(i, s));
    for (auto& c : cumulative_) c /= sum;
  }
  int draw(std::mt19937_64& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const auto at = std::lower_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin();
    return static_cast<int>(std::min<std::ptrdiff_t>(at, static_cast<std::ptrdiff_t>(cumulative_.size()) - 1));
  }

 private:
  std::vector<double> cumulative_;
};

}  // namespace bench
