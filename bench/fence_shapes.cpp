#include "fence_shapes.hpp"

#include "store/fence_commands.hpp"

namespace bench {

std::string fence_id_filter(int i) { return R"({"_id": )" + std::to_string(i) + "}"; }

void fence_fill(direct_conn& c) {
  for (int i = 0; i < fence_documents; ++i) {
    bson_t* doc = BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT64(0));
    mongoc_collection_insert_one(c.coll, doc, nullptr, nullptr, nullptr);
    bson_destroy(doc);
  }
}

namespace {
bool send(direct_conn& c, bson_t* filter, bson_t* update) {
  bson_t reply;
  const bool ok = mongoc_collection_update_one(c.coll, filter, update, &c.opts, &reply, nullptr);
  bson_iter_t it;
  // One document matched, as the fenced write's callers check: a miss is not a write.
  const bool matched = ok && bson_iter_init_find(&it, &reply, "matchedCount") && bson_iter_as_int64(&it) == 1;
  bson_destroy(&reply);
  bson_destroy(filter);
  bson_destroy(update);
  return matched;
}
}  // namespace

bool unfenced_update(direct_conn& c, int i) {
  return send(c, BCON_NEW("_id", BCON_INT32(i)), BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}"));
}

bool fenced_shape_update(direct_conn& c, std::int64_t token, int i) {
  return send(c,
              BCON_NEW("_id", BCON_INT32(i), "$or", "[", "{", "fence", "{", "$lte", BCON_INT64(token), "}", "}", "{",
                       "fence", "{", "$exists", BCON_BOOL(false), "}", "}", "]"),
              BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}", "$set", "{", "fence", BCON_INT64(token), "}"));
}

bool fenced_body_update(mongoc_client_t* client, const std::string& coll, std::int64_t token, int i) {
  mongolock::detail::fence_request r;
  r.database = fence_database;
  r.collection = coll;
  r.token = token;
  r.items.push_back({mongolock::detail::fence_kind::update, {fence_id_filter(i)}, {fence_change}, false});
  const auto out = mongolock::detail::fenced_write(client, r);
  return !out.ec && out.value.matched == 1;
}

}  // namespace bench
