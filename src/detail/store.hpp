#pragma once
// The lock document and every blocking operation on it. Each function is one or two round trips,
// runs on a worker thread, and never throws.
//
// Document: { _id: <name>, owner: <32 hex chars> | null, token: int64, beat: int64,
//             expiry_ms: int64, acquired_at, renewed_at: dates (holder's clock, hints only),
//             idle_since: date (only while free; the TTL index's field) }
// Fencing counter: { _id: { mongolock: "epoch" }, n: int64 } in the same collection (its _id is a
// subdocument, so it can never collide with a lock name).
#include <mongoc/mongoc.h>

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "detail/expiry_observer.hpp"
#include "mongolock/options.hpp"

namespace mongolock::detail {

template <class T>
struct outcome {
  boost::system::error_code ec;
  std::string message;      // the server's or driver's message, credentials removed
  bool ambiguous = false;   // the command may have been applied although it failed
  T value{};
};

template <class T>
outcome<T> success(T v) {
  outcome<T> o;
  o.value = std::move(v);
  return o;
}
template <class T, class U>
outcome<T> failure_from(const outcome<U>& other) {
  outcome<T> o;
  o.ec = other.ec;
  o.message = other.message;
  o.ambiguous = other.ambiguous;
  return o;
}

struct lock_doc {
  bool exists = false;
  held_state held;  // held.owner empty = free
  std::int64_t idle_since_ms = 0;   // informational (releaser's wall clock)
  std::int64_t acquired_at_ms = 0;  // informational (holder's wall clock)
  std::int64_t renewed_at_ms = 0;   // holder's wall clock at its last renewal: a hint, never a verdict
};

struct taken {
  bool won = false;
  std::int64_t token = 0;
};

struct store_config {
  std::string database;
  std::string collection;
  write_concern durability = write_concern::majority;
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::seconds idle_cleanup{86400};
};

// The local wall clock in ms, for the informational fields above.
std::int64_t wall_ms();

struct server_info {
  std::string version;      // buildInfo.version, e.g. "8.0.4"
  int max_wire_version = 0;
};

// Oldest wire version we accept: 7 = MongoDB 4.0 (retryable writes, majority write concern).
inline constexpr int min_wire_version = 7;
boost::system::error_code check_server(const server_info& info, std::string* why);

outcome<server_info> query_server(mongoc_client_t*);
// Version check + TTL index creation; done once per collection, off the hot path.
outcome<server_info> prepare(mongoc_client_t*, const store_config&);
outcome<lock_doc> read_lock(mongoc_client_t*, const store_config&, std::string_view name);
outcome<std::vector<lock_doc>> read_all(mongoc_client_t*, const store_config&,
                                        std::vector<std::string>* names);
// One compare-and-swap against what the caller observed (missing, free, or expired holder).
outcome<taken> try_take(mongoc_client_t*, const store_config&, std::string_view name,
                        const lock_doc& observed, std::string_view owner,
                        std::chrono::milliseconds expiry);
outcome<bool> renew(mongoc_client_t*, const store_config&, std::string_view name,
                    std::string_view owner, std::int64_t token, std::chrono::milliseconds expiry);
outcome<bool> release(mongoc_client_t*, const store_config&, std::string_view name,
                      std::string_view owner, std::int64_t token);
// Operator override: frees the lock whoever holds it. value = the owner that was removed.
outcome<std::string> force_release(mongoc_client_t*, const store_config&, std::string_view name);
outcome<std::int64_t> release_owners(mongoc_client_t*, const store_config&,
                                     const std::vector<std::string>& owners);

}  // namespace mongolock::detail
