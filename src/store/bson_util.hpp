#pragma once
// Small RAII and lookup helpers over libbson / libmongoc handles.
#include <mongoc/mongoc.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// The collection handles of one worker's connection, kept while the worker holds it (client_impl
// opens this scope around the worker's life): getting a handle copies the client's read and write
// settings and formats its namespace, about 5,000 instructions a command (libmongoc 1.23) on the
// way to the server, which the benchmark's floor (bench/direct.cpp) spends once. A handle is only
// ever used by the thread that holds its client, one command after another. Outside a scope, for
// another client, or past `max_kept` collections, collection_ref gets a handle of its own.
class collection_cache {
 public:
  static constexpr std::size_t max_kept = 8;

  explicit collection_cache(mongoc_client_t* c) : client_(c), outer_(current_) {
    kept_.reserve(max_kept);  // so that keeping a handle never fails after it was made
    current_ = this;
  }
  ~collection_cache() {
    current_ = outer_;
    for (auto& k : kept_) mongoc_collection_destroy(k.handle);
  }
  collection_cache(const collection_cache&) = delete;
  collection_cache& operator=(const collection_cache&) = delete;

  // This thread's handle of db.coll on `c`, kept until the scope ends; null if there is none to keep.
  static mongoc_collection_t* find(mongoc_client_t* c, const std::string& db, const std::string& coll) {
    collection_cache* s = current_;
    if (!s || s->client_ != c) return nullptr;
    for (auto& k : s->kept_)
      if (k.db == db && k.coll == coll) return k.handle;
    if (s->kept_.size() >= max_kept) return nullptr;
    s->kept_.push_back({db, coll, mongoc_client_get_collection(c, db.c_str(), coll.c_str())});
    return s->kept_.back().handle;
  }

 private:
  struct kept {
    std::string db, coll;
    mongoc_collection_t* handle;
  };
  static inline thread_local collection_cache* current_ = nullptr;
  mongoc_client_t* client_;
  collection_cache* outer_;
  std::vector<kept> kept_;
};

class collection_ref {
 public:
  collection_ref(mongoc_client_t* c, const std::string& db, const std::string& coll)
      : c_(collection_cache::find(c, db, coll)), owned_(c_ == nullptr) {
    if (owned_) c_ = mongoc_client_get_collection(c, db.c_str(), coll.c_str());
  }
  ~collection_ref() {
    if (owned_) mongoc_collection_destroy(c_);
  }
  collection_ref(const collection_ref&) = delete;
  collection_ref& operator=(const collection_ref&) = delete;
  mongoc_collection_t* get() const { return c_; }

 private:
  mongoc_collection_t* c_;
  bool owned_;
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
