#include <unistd.h>

#include "engine/provider_impl.hpp"
#include "model/random_source.hpp"

namespace mongolock::detail {

std::string new_owner_id() {
  unsigned char bytes[16];
  random_bytes(bytes, sizeof bytes);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t i = 0; i < sizeof bytes; ++i) {
    out[2 * i] = hex[bytes[i] >> 4];
    out[2 * i + 1] = hex[bytes[i] & 0xF];
  }
  return out;
}

std::uint64_t new_seed() {
  unsigned char bytes[8];
  random_bytes(bytes, sizeof bytes);
  std::uint64_t s = 0;
  for (const unsigned char b : bytes) s = s << 8 | b;
  return s;
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
