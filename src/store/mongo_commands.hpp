#pragma once
// The lock document and every blocking operation on it. Each function is one or two round trips,
// runs on a worker thread, and never throws.
//
// Document: { _id: <name>, owner: <32 hex chars> | null, token: int64, beat: int64,
//             expiry_ms: int64, acquired_at, renewed_at: dates (holder's clock, hints only),
//             idle_since: date (only while free; the TTL index's field),
//             last_run_token: int64, last_run_at: date (a completed run, docs/design.md section 13) }
// Declaration: { _id: <name>, kind: "semaphore" | "rw_lock", permits: int64, declared_at: date }
// (docs/design.md section 10): no take matches it, `list` skips it.
#include <mongoc/mongoc.h>

#include <boost/system/error_code.hpp>
#include <chrono>
#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/lock_store.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

struct store_config {
  std::string database;
  std::string collection;
  write_concern durability = write_concern::majority;
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::seconds idle_cleanup{86400};
  // This process, rewritten by every renewal: a lock handed over from another process names its
  // holder's host and pid from its first renewal on (the releaser does not know them).
  holder_meta holder;
};

// Oldest wire version we accept: 7 = MongoDB 4.0 (retryable writes, majority write concern).
inline constexpr int min_wire_version = 7;
boost::system::error_code check_server(const server_info& info, std::string* why);

// What a failed driver call means for the engine: nothing sent (server_unavailable), maybe
// applied (ambiguous: a stream error after sending a write, or a write-concern error, which is
// errc::ambiguous_result), or refused by the server (server_error, with its code and message).
// `reply`: the failed write's reply, if any (its errorLabels).
template <class T>
outcome<T> classify(const bson_error_t& e, bool write_was_sent, const bson_t* reply = nullptr);
bool is_duplicate_key(const bson_error_t& e);

// Command builders: pure, so their documents are unit-tested.
// find options for a read: always the primary; majority read concern for every acquire read.
void build_read_opts(read_mode, bson_t* opts, mongoc_read_prefs_t** prefs);
// `beat`: the heartbeat the write carries (a grouped statement draws its own and keeps it); a fresh
// random one when not given. A blind take (observed missing) is to be sent as an upsert.
void build_swap(const take_request&, std::int64_t now_ms, bson_t* filter, bson_t* change,
                std::optional<std::int64_t> beat = std::nullopt);
// Joining the line with `ticket` (compare-and-swap on the ticket counter), and leaving it.
void build_join(std::string_view name, std::string_view owner, std::int64_t ticket, bson_t* filter, bson_t* change);
void build_leave(std::string_view name, std::string_view owner, bson_t* filter, bson_t* change);
// names[i] with owners[i], the same lease's: one part of a release of many (engine/splitting_store.hpp).
void build_release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                          bson_t* filter, bson_t* change);
// The filter of a find of the documents `names` (_id $in).
void build_find_each(const std::vector<std::string>& names, bson_t* filter);
void build_release(std::string_view name, std::string_view owner, std::int64_t token, bson_t* filter, bson_t* change,
                   std::optional<std::int64_t> beat = std::nullopt);
void build_refresh(std::string_view name, std::string_view owner, std::int64_t ticket, bson_t* filter, bson_t* change);
// The renewal of every lease in `held` (one filter clause each, $or'ed): a fresh heartbeat.
void build_renewal(const std::vector<held_lease>& held, std::chrono::milliseconds expiry, std::int64_t now_ms,
                   bson_t* filter, bson_t* change,
                   const holder_meta* holder = nullptr);

// A lock document as read (any types, any values: what the server returns is not trusted; a
// field of the wrong type reads as 0 or ""). Pure, so it is fuzzed (fuzz/lock_doc_fuzz.cpp).
lock_doc parse_lock(const bson_t* doc);

// One blocking command each (worker threads only). Never throw.
outcome<server_info> query_server(mongoc_client_t*);
outcome<server_info> prepare(mongoc_client_t*, const store_config&);
outcome<lock_doc> read_lock(mongoc_client_t*, const store_config&, std::string_view name, read_mode);
outcome<std::vector<lock_doc>> read_locks(mongoc_client_t*, const store_config&, const std::vector<std::string>& names,
                                          read_mode);
outcome<std::vector<named_doc>> read_all(mongoc_client_t*, const store_config&);
outcome<bool> take(mongoc_client_t*, const store_config&, const take_request&);
// One update for every lease in `held`; when it matches fewer, a read tells which (mongo_commands.cpp).
outcome<std::vector<bool>> renew(mongoc_client_t*, const store_config&, const std::vector<held_lease>& held,
                                 std::chrono::milliseconds expiry);
outcome<bool> release(mongoc_client_t*, const store_config&, std::string_view name,
                      std::string_view owner, std::int64_t token);
// Takes and releases in one unordered command (lock_store::write_grouped); when it matches fewer
// statements than it sent, a read of the documents judges each (model/grouped_write.hpp).
outcome<std::vector<grouped_outcome>> write_grouped(mongoc_client_t*, const store_config&, std::vector<grouped_write>);
outcome<std::string> force_release(mongoc_client_t*, const store_config&, std::string_view name, bool immediate);
outcome<bool> proclaim(mongoc_client_t*, const store_config&, std::string_view name, std::string_view owner,
                       std::int64_t token, std::string_view value);
outcome<bool> record_run(mongoc_client_t*, const store_config&, std::string_view name, std::string_view owner,
                         std::int64_t token);
outcome<declaration> declare(mongoc_client_t*, const store_config&, std::string_view name, const declaration&);
outcome<bool> join_line(mongoc_client_t*, const store_config&, std::string_view name, std::string_view owner,
                        std::int64_t ticket);
outcome<bool> leave_line(mongoc_client_t*, const store_config&, std::string_view name, std::string_view owner);
outcome<bool> refresh_line(mongoc_client_t*, const store_config&, std::string_view name, std::string_view owner,
                           std::int64_t ticket);
outcome<std::int64_t> release_owners(mongoc_client_t*, const store_config&, const std::vector<std::string>& names,
                                     const std::vector<std::string>& owners);

}  // namespace mongolock::detail
