#pragma once
// The fenced write's fast reading of the JSON most filters and updates are (docs/design.md
// section 15, "Cost"): libbson's reader allocates and clears about 40 kB for every text it reads
// (its parser stack, its buffer), which was the largest share of the client's work for a fenced
// write (docs/benchmarks.md, scenario 10). This reads a plain subset itself and leaves the rest to
// libbson, so what a text means is always what libbson's reader would make of it.
#include <bson/bson.h>

#include <string_view>

namespace mongolock::detail {

// If `text` is one JSON object in the plain subset, appends it to `out` (empty) exactly as
// libbson's reader would (the same types, the same bytes) and returns true. Otherwise returns
// false with `out` empty again, and the caller reads the text with libbson, which also gives the
// errors. The subset: objects, arrays, strings of printable ASCII without escapes, integers
// without a fraction or exponent (int32 when they fit, int64 otherwise, as libbson), true, false,
// null; keys that start with '$' only if they are query or update operators that libbson reads as
// plain keys (never an extended JSON wrapper such as $numberLong, $oid, $date, $regex, $type);
// blanks (space, tab, CR, LF) between tokens and around the object; at most 32 levels deep.
bool parse_plain_json(std::string_view text, bson_t* out);

}  // namespace mongolock::detail
