#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "engine/provider_impl.hpp"

namespace mongolock::detail {

std::string new_owner_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {  // the kernel's CSPRNG; blocks only before it is seeded at boot
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed: cannot create an owner id");
    }
    got += static_cast<std::size_t>(n);
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    out[2 * i] = hex[bytes[i] >> 4];
    out[2 * i + 1] = hex[bytes[i] & 0xF];
  }
  return out;
}

holder_meta this_process(std::string label) {
  holder_meta m;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) m.host = host;
  m.pid = ::getpid();
  m.label = std::move(label);
  return m;
}

}  // namespace mongolock::detail
