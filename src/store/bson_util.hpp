#pragma once
// Small RAII and lookup helpers over libbson / libmongoc handles.
#include <mongoc/mongoc.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace mongolock::detail {

class bson_doc {
 public:
  bson_doc() { bson_init(&b_); }
  ~bson_doc() { bson_destroy(&b_); }
  bson_doc(const bson_doc&) = delete;
  bson_doc& operator=(const bson_doc&) = delete;
  bson_t* get() { return &b_; }
  const bson_t* get() const { return &b_; }

 private:
  bson_t b_;
};

class collection_ref {
 public:
  collection_ref(mongoc_client_t* c, const std::string& db, const std::string& coll)
      : c_(mongoc_client_get_collection(c, db.c_str(), coll.c_str())) {}
  ~collection_ref() { mongoc_collection_destroy(c_); }
  collection_ref(const collection_ref&) = delete;
  collection_ref& operator=(const collection_ref&) = delete;
  mongoc_collection_t* get() const { return c_; }

 private:
  mongoc_collection_t* c_;
};

inline void append_str(bson_t* b, const char* key, std::string_view v) {
  bson_append_utf8(b, key, -1, v.data(), static_cast<int>(v.size()));
}

inline std::int64_t get_int(const bson_t* doc, const char* key, std::int64_t fallback = 0) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, key)) return fallback;
  if (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it)) return bson_iter_as_int64(&it);
  if (BSON_ITER_HOLDS_DOUBLE(&it)) {
    // libbson casts a double to int64 unchecked (undefined for NaN and beyond +-2^63): saturate.
    const double v = bson_iter_double(&it);
    if (std::isnan(v)) return fallback;
    if (v >= 9.2e18) return INT64_MAX;
    if (v <= -9.2e18) return INT64_MIN;
    return static_cast<std::int64_t>(v);
  }
  return fallback;
}

inline std::string get_str(const bson_t* doc, const char* key) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_UTF8(&it)) {
    std::uint32_t len = 0;
    const char* s = bson_iter_utf8(&it, &len);
    return std::string(s, len);
  }
  return {};
}

}  // namespace mongolock::detail
