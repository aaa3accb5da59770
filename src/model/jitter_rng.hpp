#pragma once
// A tiny PRNG (splitmix64) for backoff jitter. It is 8 bytes where std::mt19937_64 is 2.5 KB,
// which matters when every waiting coroutine carries one: jitter needs spread, not secrecy.
#include <cstdint>
#include <limits>

namespace mongolock::detail {

class jitter_rng {
 public:
  using result_type = std::uint64_t;
  explicit jitter_rng(std::uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

}  // namespace mongolock::detail
