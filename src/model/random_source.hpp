#pragma once
// The seam through which the library draws its randomness (docs/design.md section 11, "Virtual
// time"): owner ids and the seeds of its jitter. Outside a simulation nothing is installed and
// they come from the kernel (getrandom(2)); a simulated process installs its own source while its
// handlers run, so that a seed replays the same owner ids and the same backoff.
#include <cstddef>

#include "model/installed.hpp"

namespace mongolock::detail {

class random_source {
 public:
  random_source() = default;
  random_source(const random_source&) = delete;
  random_source& operator=(const random_source&) = delete;

  virtual void fill(unsigned char* out, std::size_t n) noexcept = 0;

 protected:
  ~random_source() = default;
};

// The random source installed on this thread, or null: the kernel's.
inline random_source* installed_random_source() noexcept { return installed<random_source>::get(); }
// Installs a random source on this thread for the scope's life.
using random_source_scope = installed<random_source>::scope;

// `n` random bytes from the installed source, else from getrandom(2) (the kernel's CSPRNG, which
// blocks only before it is seeded at boot). Throws std::runtime_error if the kernel refuses.
void random_bytes(unsigned char* out, std::size_t n);

}  // namespace mongolock::detail
