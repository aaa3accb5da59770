// The fenced write's own JSON reader (src/store/plain_json.hpp) against libbson's: whatever text
// it accepts must give exactly the bytes libbson's reader gives for it, and whatever libbson
// refuses it must refuse too (a document's meaning is always libbson's, docs/design.md section 15).
#include <bson/bson.h>

#include <cstring>

#include "fuzz_check.hpp"
#include "store/plain_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::text(data, size);
  bson_t mine = BSON_INITIALIZER;
  const bool plain = mongolock::detail::parse_plain_json(text, &mine);
  if (!plain) {
    fuzz::check(mine.len == 5, "a text the plain reader declined left bytes in its output");
    bson_destroy(&mine);
    return 0;
  }
  bson_error_t error;
  bson_t* theirs = bson_new_from_json(reinterpret_cast<const std::uint8_t*>(text.data()),
                                      static_cast<ssize_t>(text.size()), &error);
  fuzz::check(theirs != nullptr, "the plain reader accepted a text libbson refuses");
  fuzz::check(theirs->len == mine.len && std::memcmp(bson_get_data(theirs), bson_get_data(&mine), mine.len) == 0,
              "the plain reader and libbson made different documents of one text");
  bson_destroy(theirs);
  bson_destroy(&mine);
  return 0;
}
