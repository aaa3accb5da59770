#pragma once
// Blocking libmongoc code for the benchmark's baselines (no Asio, no worker pool):
//  - the floor: exactly the commands one mongolock acquire+release cycle sends, in a plain loop;
//  - the seed article's algorithm: $setOnInsert upsert to acquire, fixed 100 ms retry, delete
//    to release;
//  - DistributedLock.MongoDB's algorithm (seed 004), re-implemented: a write per attempt.
#include <mongoc/mongoc.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace bench {

struct direct_conn {
  explicit direct_conn(const std::string& uri, const std::string& db, const std::string& coll);
  ~direct_conn();
  direct_conn(const direct_conn&) = delete;
  direct_conn& operator=(const direct_conn&) = delete;
  mongoc_client_t* client;
  mongoc_collection_t* coll;
  bson_t opts;  // majority write concern, as the library uses
};

// A free lock document, as mongolock leaves one after a release: where a floor cycle starts.
void insert_free(direct_conn& c, const std::string& name);
// The floor: one compare-and-swap to take a free lock and one to free it again, the same filters
// and updates as mongolock's uncontended cycle. Returns false on a server error.
bool floor_cycle(direct_conn& c, const std::string& name, std::int64_t& token, const std::string& owner);

// Seed algorithm: one attempt; true when this call inserted the lock document.
bool seed_try_acquire(direct_conn& c, const std::string& name, const std::string& owner);
void seed_release(direct_conn& c, const std::string& name, const std::string& owner);

// DistributedLock.MongoDB's algorithm (seed 004), re-implemented: one write per attempt.
bool dl_try_acquire(direct_conn& c, const std::string& name, const std::string& owner, std::chrono::milliseconds expiry);
void dl_release(direct_conn& c, const std::string& name, const std::string& owner);

}  // namespace bench
