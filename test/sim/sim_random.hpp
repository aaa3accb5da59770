#pragma once
// The simulation's randomness: every draw of a run comes from its seed (docs/design.md section 11,
// "Virtual time"), so that the same seed replays the same run.
#include <chrono>
#include <cstdint>
#include <vector>

#include "model/random_source.hpp"

namespace sim {

// splitmix64: small, fast, and every stream it forks is as good as the first.
class rng {
 public:
  explicit rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n > 0; the bias of a plain modulo is below 2^-40 for the n drawn here).
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  // Uniform in [lo, hi].
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
  }
  // True with probability p.
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <class Rep, class Period>
  std::chrono::duration<Rep, Period> between(std::chrono::duration<Rep, Period> lo, std::chrono::duration<Rep, Period> hi) {
    return std::chrono::duration<Rep, Period>{between(static_cast<std::int64_t>(lo.count()), static_cast<std::int64_t>(hi.count()))};
  }
  // A new stream for one part of the run: its draws do not shift when another part draws more.
  rng fork() { return rng(next()); }

 private:
  std::uint64_t state_;
};

// A simulated process's randomness: its owner ids and jitter seeds (model/random_source.hpp).
class process_random final : public mongolock::detail::random_source {
 public:
  explicit process_random(std::uint64_t seed) : rng_(seed) {}
  void fill(unsigned char* out, std::size_t n) noexcept override {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(rng_.next());
  }

 private:
  rng rng_;
};

}  // namespace sim
