#include "model/random_source.hpp"

#include <sys/random.h>

#include <cerrno>
#include <stdexcept>

namespace mongolock::detail {

void random_bytes(unsigned char* out, std::size_t n) {
  if (auto* s = installed_random_source()) return s->fill(out, n);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed: no random bytes for an owner id or a seed");
    }
    got += static_cast<std::size_t>(r);
  }
}

}  // namespace mongolock::detail
