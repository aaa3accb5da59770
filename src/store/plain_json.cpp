#include "store/plain_json.hpp"

#include <array>
#include <cstdint>

namespace mongolock::detail {

namespace {

constexpr int max_depth = 32;

// Operators that libbson's reader keeps as plain keys. Every other key that starts with '$' goes
// to libbson: its reader turns some into types ($numberLong, $oid, $date, $regex with $options,
// $type beside $binary...) and the list differs between versions.
bool plain_operator(std::string_view k) {
  static constexpr std::array<std::string_view, 30> ops{
      "$and", "$or",  "$nor", "$not",  "$in",     "$nin",   "$eq",         "$ne",   "$lt",      "$lte",
      "$gt",  "$gte", "$exists", "$elemMatch", "$size", "$all", "$inc", "$set", "$unset", "$mul",
      "$min", "$max", "$rename", "$setOnInsert", "$push", "$pull", "$pullAll", "$addToSet", "$pop", "$each"};
  for (auto op : ops)
    if (k == op) return true;
  return false;
}

struct reader {
  const char* p;
  const char* end;

  void blanks() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) ++p;
  }
  // What may follow a number or a literal inside an object or an array.
  bool at_delimiter() const {
    return p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ',' || *p == '}' || *p == ']');
  }
  // At '"': printable ASCII up to the closing quote; an escape or any other byte goes to libbson.
  bool string(std::string_view& s) {
    const char* begin = ++p;
    for (; p < end; ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') {
        s = {begin, static_cast<std::size_t>(p - begin)};
        ++p;
        return true;
      }
      if (c == '\\' || c < 0x20 || c > 0x7e) return false;
    }
    return false;
  }
  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word) return false;
    p += word.size();
    return at_delimiter();
  }
  // As libbson's reader: int32 when the value fits, int64 otherwise. Leading zeros, -0, more than
  // 18 digits (no overflow check needed), a fraction or an exponent go to libbson.
  bool integer(bson_t* parent, std::string_view key) {
    const bool negative = *p == '-';
    if (negative) ++p;
    const char* digits = p;
    std::uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + static_cast<std::uint64_t>(*p++ - '0');
    const auto n = p - digits;
    if (n == 0 || n > 18 || (n > 1 && *digits == '0') || (negative && v == 0) || !at_delimiter()) return false;
    const int len = static_cast<int>(key.size());
    const std::int64_t signed_v = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
    if (signed_v >= INT32_MIN && signed_v <= INT32_MAX)
      return bson_append_int32(parent, key.data(), len, static_cast<std::int32_t>(signed_v));
    return bson_append_int64(parent, key.data(), len, signed_v);
  }
  bool value(bson_t* parent, std::string_view key, int depth) {
    if (p >= end) return false;
    const int len = static_cast<int>(key.size());
    switch (*p) {
      case '{':
      case '[': {
        if (depth >= max_depth) return false;
        bson_t child;
        const bool doc = *p == '{';
        if (!(doc ? bson_append_document_begin(parent, key.data(), len, &child)
                  : bson_append_array_begin(parent, key.data(), len, &child)))
          return false;
        ++p;
        const bool ok = doc ? object(&child, depth + 1) : array(&child, depth + 1);
        // Closed even on failure: the parent is then discarded, but only once it is whole.
        const bool closed = doc ? bson_append_document_end(parent, &child) : bson_append_array_end(parent, &child);
        return ok && closed;
      }
      case '"': {
        std::string_view s;
        return string(s) && bson_append_utf8(parent, key.data(), len, s.data(), static_cast<int>(s.size()));
      }
      case 't':
        return literal("true") && bson_append_bool(parent, key.data(), len, true);
      case 'f':
        return literal("false") && bson_append_bool(parent, key.data(), len, false);
      case 'n':
        return literal("null") && bson_append_null(parent, key.data(), len);
      default:
        return (*p == '-' || (*p >= '0' && *p <= '9')) && integer(parent, key);
    }
  }
  // After '{'.
  bool object(bson_t* doc, int depth) {
    blanks();
    if (p < end && *p == '}') return ++p, true;
    for (;;) {
      std::string_view key;
      if (p >= end || *p != '"' || !string(key) || key.empty()) return false;
      if (key[0] == '$' && !plain_operator(key)) return false;
      blanks();
      if (p >= end || *p != ':') return false;
      ++p;
      blanks();
      if (!value(doc, key, depth)) return false;
      blanks();
      if (p >= end) return false;
      if (*p == '}') return ++p, true;
      if (*p != ',') return false;
      ++p;
      blanks();
    }
  }
  // After '['.
  bool array(bson_t* arr, int depth) {
    blanks();
    if (p < end && *p == ']') return ++p, true;
    for (std::uint32_t i = 0;; ++i) {
      char buf[16];
      const char* key = nullptr;
      const auto len = bson_uint32_to_string(i, &key, buf, sizeof buf);
      if (!value(arr, {key, len}, depth)) return false;
      blanks();
      if (p >= end) return false;
      if (*p == ']') return ++p, true;
      if (*p != ',') return false;
      ++p;
      blanks();
    }
  }
};

}  // namespace

bool parse_plain_json(std::string_view text, bson_t* out) {
  reader r{text.data(), text.data() + text.size()};
  r.blanks();
  if (r.p >= r.end || *r.p != '{') return false;
  ++r.p;
  const bool ok = r.object(out, 1) && (r.blanks(), r.p == r.end);
  if (!ok) bson_reinit(out);
  return ok;
}

}  // namespace mongolock::detail
