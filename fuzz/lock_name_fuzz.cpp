// Lock-name and namespace validation: whatever is accepted is something the
// driver can send as a BSON string: 1..512 bytes, no NUL, UTF-8 that libbson also accepts.
#include <bson/bson.h>

#include "fuzz_check.hpp"
#include "mongolock/options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string name = fuzz::text(data, size);
  std::string why;
  const auto ec = mongolock::validate_lock_name(name, &why);
  if (!ec) {
    fuzz::check(!name.empty() && name.size() <= 512, "a name of the wrong length was accepted");
    fuzz::check(bson_utf8_validate(name.data(), name.size(), false), "a name libbson rejects was accepted");
  } else {
    fuzz::check(!why.empty(), "a name was refused without a reason");
  }
  const auto cut = name.find('.');
  if (cut != std::string::npos && !mongolock::validate_namespace(name.substr(0, cut), name.substr(cut + 1), &why))
    fuzz::check(bson_utf8_validate(name.data(), name.size(), false), "a namespace libbson rejects was accepted");
  return 0;
}
