#include "direct.hpp"

#include <chrono>

namespace bench {

direct_conn::direct_conn(const std::string& uri, const std::string& db, const std::string& name) {
  client = mongoc_client_new(uri.c_str());
  mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
  coll = mongoc_client_get_collection(client, db.c_str(), name.c_str());
  bson_init(&opts);
  mongoc_write_concern_t* wc = mongoc_write_concern_new();
  mongoc_write_concern_set_wmajority(wc, 10000);
  mongoc_write_concern_append(wc, &opts);
  mongoc_write_concern_destroy(wc);
}

direct_conn::~direct_conn() {
  bson_destroy(&opts);
  mongoc_collection_destroy(coll);
  mongoc_client_destroy(client);
}

namespace {

bool update(direct_conn& c, bson_t* filter, bson_t* change, bool upsert, std::int64_t* matched) {
  bson_t opts, reply;
  bson_copy_to(&c.opts, &opts);
  if (upsert) BSON_APPEND_BOOL(&opts, "upsert", true);
  bson_error_t err;
  const bool ok = mongoc_collection_update_one(c.coll, filter, change, &opts, &reply, &err);
  bson_iter_t it;
  if (ok && matched) *matched = bson_iter_init_find(&it, &reply, upsert ? "upsertedCount" : "matchedCount")
                                    ? bson_iter_as_int64(&it) : 0;
  bson_destroy(&opts);
  bson_destroy(&reply);
  return ok;
}

}  // namespace

void insert_free(direct_conn& c, const std::string& name) {
  bson_t doc;  // a free lock document, as mongolock leaves it after a release
  bson_init(&doc);
  BSON_APPEND_UTF8(&doc, "_id", name.c_str());
  BSON_APPEND_NULL(&doc, "owner");
  BSON_APPEND_INT64(&doc, "token", 0);
  BSON_APPEND_INT64(&doc, "beat", 1);
  mongoc_collection_insert_one(c.coll, &doc, nullptr, nullptr, nullptr);
  bson_destroy(&doc);
}

bool floor_cycle(direct_conn& c, const std::string& name, std::int64_t& token, const std::string& owner) {
  // take: {_id, owner: null, token: T, beat: B} -> {owner, token: T+1, beat: 0, ...}
  bson_t filter, change, set, unset;
  bson_init(&filter);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  BSON_APPEND_NULL(&filter, "owner");
  BSON_APPEND_INT64(&filter, "token", token);
  BSON_APPEND_INT64(&filter, "beat", 1);
  bson_t waiting, any;  // nobody in the lock's line, as mongolock's take of a free lock requires
  BSON_APPEND_DOCUMENT_BEGIN(&filter, "waiting", &waiting);
  BSON_APPEND_ARRAY_BEGIN(&waiting, "$in", &any);
  BSON_APPEND_NULL(&any, "0");
  BSON_APPEND_INT64(&any, "1", 0);
  bson_append_array_end(&waiting, &any);
  bson_append_document_end(&filter, &waiting);
  bson_init(&change);
  BSON_APPEND_DOCUMENT_BEGIN(&change, "$set", &set);
  BSON_APPEND_UTF8(&set, "owner", owner.c_str());
  BSON_APPEND_INT64(&set, "token", token + 1);
  BSON_APPEND_INT64(&set, "beat", 0);
  BSON_APPEND_INT64(&set, "expiry_ms", 30000);
  BSON_APPEND_DATE_TIME(&set, "acquired_at", 0);
  bson_append_document_end(&change, &set);
  BSON_APPEND_DOCUMENT_BEGIN(&change, "$unset", &unset);
  BSON_APPEND_UTF8(&unset, "idle_since", "");
  bson_append_document_end(&change, &unset);
  std::int64_t matched = 0;
  bool ok = update(c, &filter, &change, false, &matched) && matched == 1;
  bson_destroy(&filter);
  bson_destroy(&change);
  if (!ok) return false;
  ++token;
  // free: {_id, owner, token} -> {owner: null, idle_since}, beat + 1
  bson_t f2, c2, s2, inc;
  bson_init(&f2);
  BSON_APPEND_UTF8(&f2, "_id", name.c_str());
  BSON_APPEND_UTF8(&f2, "owner", owner.c_str());
  BSON_APPEND_INT64(&f2, "token", token);
  bson_init(&c2);
  BSON_APPEND_DOCUMENT_BEGIN(&c2, "$set", &s2);
  BSON_APPEND_NULL(&s2, "owner");
  BSON_APPEND_DATE_TIME(&s2, "idle_since", 0);
  bson_append_document_end(&c2, &s2);
  BSON_APPEND_DOCUMENT_BEGIN(&c2, "$inc", &inc);
  BSON_APPEND_INT64(&inc, "beat", 1);
  bson_append_document_end(&c2, &inc);
  ok = update(c, &f2, &c2, false, &matched) && matched == 1;
  bson_destroy(&f2);
  bson_destroy(&c2);
  return ok;
}

bool seed_try_acquire(direct_conn& c, const std::string& name, const std::string& owner) {
  bson_t filter, change, soi;
  bson_init(&filter);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  bson_init(&change);
  BSON_APPEND_DOCUMENT_BEGIN(&change, "$setOnInsert", &soi);
  BSON_APPEND_UTF8(&soi, "owner", owner.c_str());
  BSON_APPEND_DATE_TIME(&soi, "ts", std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch()).count());
  bson_append_document_end(&change, &soi);
  std::int64_t upserted = 0;
  const bool ok = update(c, &filter, &change, true, &upserted);
  bson_destroy(&filter);
  bson_destroy(&change);
  return ok && upserted == 1;
}

void seed_release(direct_conn& c, const std::string& name, const std::string& owner) {
  bson_t filter, reply;
  bson_init(&filter);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  BSON_APPEND_UTF8(&filter, "owner", owner.c_str());
  bson_error_t err;
  mongoc_collection_delete_one(c.coll, &filter, &c.opts, &reply, &err);
  bson_destroy(&filter);
  bson_destroy(&reply);
}

// DistributedLock.MongoDB's algorithm as seed 004 describes it, re-implemented here (the package
// is not on this machine's NuGet): every attempt is one write that takes the document if it is
// missing or expired (by the client's clock; the real one uses the server's $$NOW in a pipeline
// update, which the emulator lacks), and fails with E11000 on the upsert when it is held.
bool dl_try_acquire(direct_conn& c, const std::string& name, const std::string& owner, std::chrono::milliseconds expiry) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  bson_t filter, change, set, any, a, b, lt;
  bson_init(&filter);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  BSON_APPEND_ARRAY_BEGIN(&filter, "$or", &any);
  BSON_APPEND_DOCUMENT_BEGIN(&any, "0", &a);
  BSON_APPEND_NULL(&a, "lockId");
  bson_append_document_end(&any, &a);
  BSON_APPEND_DOCUMENT_BEGIN(&any, "1", &b);
  BSON_APPEND_DOCUMENT_BEGIN(&b, "expiresAt", &lt);
  BSON_APPEND_DATE_TIME(&lt, "$lt", now);
  bson_append_document_end(&b, &lt);
  bson_append_document_end(&any, &b);
  bson_append_array_end(&filter, &any);
  bson_init(&change);
  BSON_APPEND_DOCUMENT_BEGIN(&change, "$set", &set);
  BSON_APPEND_UTF8(&set, "lockId", owner.c_str());
  BSON_APPEND_DATE_TIME(&set, "expiresAt", now + expiry.count());
  bson_append_document_end(&change, &set);
  bson_t opts, reply;
  bson_copy_to(&c.opts, &opts);
  BSON_APPEND_BOOL(&opts, "upsert", true);
  bson_error_t err;
  const bool ok = mongoc_collection_update_one(c.coll, &filter, &change, &opts, &reply, &err);
  bson_iter_t it;
  const bool took = ok && ((bson_iter_init_find(&it, &reply, "matchedCount") && bson_iter_as_int64(&it) == 1) ||
                           (bson_iter_init_find(&it, &reply, "upsertedCount") && bson_iter_as_int64(&it) == 1));
  bson_destroy(&opts);
  bson_destroy(&reply);
  bson_destroy(&filter);
  bson_destroy(&change);
  return took;
}

void dl_release(direct_conn& c, const std::string& name, const std::string& owner) {
  bson_t filter, change, set;
  bson_init(&filter);
  BSON_APPEND_UTF8(&filter, "_id", name.c_str());
  BSON_APPEND_UTF8(&filter, "lockId", owner.c_str());
  bson_init(&change);
  BSON_APPEND_DOCUMENT_BEGIN(&change, "$set", &set);
  BSON_APPEND_NULL(&set, "lockId");
  bson_append_document_end(&change, &set);
  update(c, &filter, &change, false, nullptr);
  bson_destroy(&filter);
  bson_destroy(&change);
}

}  // namespace bench
