// A fenced write's filter and change (src/store/fence_commands.cpp), as a caller types them: the
// input is FILTER NUL CHANGE, and its first byte picks the kind and the upsert. Whatever is
// accepted carries the fence clause and the fence; whatever is refused says why; nothing crashes
// (invalid nested JSON once freed a document twice).
#include <bson/bson.h>

#include "fuzz_check.hpp"
#include "mongolock/error.hpp"
#include "store/fence_commands.hpp"

namespace md = mongolock::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string all = fuzz::text(data + 1, size - 1);
  const auto cut = all.find('\0');
  md::fence_item item;
  item.kind = data[0] % 3 == 0 ? md::fence_kind::update : data[0] % 3 == 1 ? md::fence_kind::replace
                                                                           : md::fence_kind::remove;
  item.upsert = (data[0] & 4) != 0;
  item.filter = {all.substr(0, cut), (data[0] & 8) != 0};
  item.change = {cut == std::string::npos ? std::string() : all.substr(cut + 1), (data[0] & 16) != 0};
  md::fence_command cmd;
  std::string why;
  const auto ec = md::build_fence_command(item, "fence", 7, cmd, &why);
  if (ec) {
    fuzz::check(ec == mongolock::errc::invalid_document, "a bad document was refused with another error");
    fuzz::check(!why.empty(), "a document was refused without a reason");
    return 0;
  }
  bson_iter_t it;
  fuzz::check(bson_iter_init_find(&it, &cmd.filter, "$or") || bson_iter_init_find(&it, &cmd.filter, "$and"),
              "an accepted filter has no fence clause");
  if (item.kind != md::fence_kind::remove)
    fuzz::check(bson_iter_init_find(&it, &cmd.change, item.kind == md::fence_kind::update ? "$set" : "fence"),
                "an accepted change does not raise the fence");
  return 0;
}
