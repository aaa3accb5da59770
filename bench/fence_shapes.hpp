#pragma once
// Scenario 10's writes (scenario_fence.cpp, fence_instructions.cpp): one document of a small
// collection, the same $inc, sent four ways, so that timed and counted rows compare like with like.
#include <mongoc/mongoc.h>

#include <cstdint>
#include <string>

#include "direct.hpp"

namespace bench {

// 100 documents: the emulator's update cost grows with the collection (docs/benchmarks.md).
constexpr int fence_documents = 100;
constexpr const char* fence_database = "mongolock_bench";
constexpr const char* fence_change = R"({"$inc": {"n": 1}})";
std::string fence_id_filter(int i);

// Documents 0..fence_documents-1, {_id: i, n: 0}, no fence.
void fence_fill(direct_conn& c);
// The unfenced update, bare libmongoc: {_id: i}, {$inc: {n: 1}}, majority write concern.
bool unfenced_update(direct_conn& c, int i);
// The fenced write's command, bare libmongoc, built with BCON as the unfenced one is: the filter
// {_id: i, $or: [{fence: {$lte: t}}, {fence: {$exists: false}}]} and the update
// {$inc: {n: 1}, $set: {fence: t}}, byte for byte what store/fence_commands.cpp sends
// (docs/design.md section 15). Its rate is the fenced write's floor on this server.
bool fenced_shape_update(direct_conn& c, std::int64_t token, int i);
// The library's blocking body (store/fence_commands.cpp, what its worker runs) from JSON text.
// Run it inside a collection_cache scope on `client` (store/bson_util.hpp), as the library's
// workers are, or each write also pays for a collection handle the worker would have kept.
bool fenced_body_update(mongoc_client_t* client, const std::string& coll, std::int64_t token, int i);

}  // namespace bench
