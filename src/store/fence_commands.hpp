#pragma once
// Fenced writes to a user's collection (docs/design.md section 15): each document changes only if
// its fence field is at most the writer's fencing token, and the same single-document update
// raises the fence to the token. Plain data in, one blocking call per document, never throws.
#include <mongoc/mongoc.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "model/lock_document.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

// A filter or update as the caller gave it: extended JSON text, or raw BSON bytes.
struct fence_input {
  std::string data;
  bool is_bson = false;
};

enum class fence_kind { update, replace, remove };

struct fence_item {
  fence_kind kind = fence_kind::update;
  fence_input filter;
  fence_input change;  // unused by remove
  bool upsert = false;
};

struct fence_request {
  std::string database;
  std::string collection;
  std::string field = "fence";
  write_concern durability = write_concern::majority;
  std::chrono::milliseconds write_timeout{10000};
  std::int64_t token = 0;
  std::vector<fence_item> items;
};

struct fence_report {
  std::int64_t matched = 0;   // documents updated, replaced or deleted
  std::int64_t upserted = 0;  // documents inserted by an upsert
  std::vector<std::size_t> refused;  // indexes into items, in order
  std::string refusal;        // the first refusal in words (both tokens)
};

// The commands one item sends, built and checked without a server (unit-tested). An error:
// errc::invalid_document or errc::invalid_options with `why`; nothing is sent then.
struct fence_command {
  bson_t filter;       // the caller's filter with the fence clause
  bson_t user_filter;  // the caller's filter alone (the failure path's read)
  bson_t change;       // the update with the fence raised, or the replacement; empty for remove
  fence_command() {
    bson_init(&filter);
    bson_init(&user_filter);
    bson_init(&change);
  }
  ~fence_command() {
    bson_destroy(&filter);
    bson_destroy(&user_filter);
    bson_destroy(&change);
  }
  fence_command(const fence_command&) = delete;
  fence_command& operator=(const fence_command&) = delete;
};
boost::system::error_code check_fence_request(const fence_request&, std::string* why);
boost::system::error_code build_fence_command(const fence_item&, std::string_view field, std::int64_t token,
                                              fence_command& out, std::string* why);

// The failure path's decisions (docs/design.md section 15, "Cost"), without I/O. What the read
// after a miss found: no document, one the fence lets the token write (no fence, or a number at
// most the token, compared exactly as the server's $lte does), or one it refuses (`refusal`
// says why: above the token, NaN, not a number).
enum class fence_seen { no_document, writable, refused };
fence_seen classify_fence(const bson_t* doc, const std::string& field, std::int64_t token, std::string* refusal);
// What a miss means, given that read; `collided`: an upsert's insert hit E11000, `resent`: this
// was already the write sent again.
enum class miss_verdict { not_matched, refused, resend, ambiguous, server_error };
miss_verdict judge_miss(fence_seen, bool collided, bool resent);
// The read's options: the primary, read concern local (what the write's filter saw).
void fence_read_opts(const std::string& field, bson_t* opts, mongoc_read_prefs_t** prefs);

// Checks the request, then writes each item in order, each as one single-document command;
// reads a document only when its write matched nothing. Stops at the first error other than a
// refusal (the report says what was done before it); ends with errc::fenced_out if any item
// was refused (the others stand). Once `stop` is set (the caller abandoned the write), sends
// nothing more: operation_aborted, before the first item or between two.
outcome<fence_report> fenced_write(mongoc_client_t*, const fence_request&, const std::atomic<bool>* stop = nullptr);

}  // namespace mongolock::detail
