#include "store/mongo_commands.hpp"

#include <algorithm>
#include <random>
#include <string_view>
#include <unordered_map>

#include "store/bson_util.hpp"
#include "mongolock/error.hpp"

namespace mongolock::detail {

using boost::system::error_code;

bool is_duplicate_key(const bson_error_t& e) { return e.domain == MONGOC_ERROR_SERVER && e.code == 11000; }

// The driver's "authentication failed" (any mechanism), and the server's AuthenticationFailed
// (18) and Unauthorized (13, a missing privilege). Nothing was applied: the command was refused.
bool is_not_authorized(const bson_error_t& e) {
  return (e.domain == MONGOC_ERROR_CLIENT && e.code == MONGOC_ERROR_CLIENT_AUTHENTICATE) ||
         (e.domain == MONGOC_ERROR_SERVER && (e.code == 13 || e.code == 18));
}

namespace {
// The server errors after which libmongoc resends a retryable write (`_mongoc_write_error_is_retryable`
// in mongoc-error.c: not primary, stepping down, shutting down, network trouble behind a router),
// and LegacyNotPrimary. The caller sees only the resend's error, so on a sent write the first
// attempt may have been applied (docs/design.md section 2, step 3); a multi-document update, never
// resent, may have been applied in part when a stepdown interrupted it.
bool is_retried_by_driver(const bson_error_t& e) {
  if (e.domain != MONGOC_ERROR_SERVER) return false;
  switch (e.code) {
    case 6:      // HostUnreachable
    case 7:      // HostNotFound
    case 89:     // NetworkTimeout
    case 91:     // ShutdownInProgress
    case 189:    // PrimarySteppedDown
    case 262:    // ExceededTimeLimit
    case 9001:   // SocketException
    case 10058:  // LegacyNotPrimary
    case 10107:  // NotWritablePrimary
    case 11600:  // InterruptedAtShutdown
    case 11602:  // InterruptedDueToReplStateChange
    case 13435:  // NotPrimaryNoSecondaryOk
    case 13436:  // NotPrimaryOrSecondary
      return true;
    default:
      return false;
  }
}
}  // namespace

template <class T>
outcome<T> classify(const bson_error_t& e, bool write_was_sent, const bson_t* reply) {
  outcome<T> o;
  o.message = e.message;
  if (is_not_authorized(e)) {
    o.ec = make_error_code(errc::not_authorized);
    return o;
  }
  switch (e.domain) {
    case MONGOC_ERROR_SERVER_SELECTION:  // nothing was sent
      o.ec = make_error_code(errc::server_unavailable);
      break;
    case MONGOC_ERROR_STREAM:  // the request may have reached the server
      o.ec = make_error_code(errc::server_unavailable);
      o.ambiguous = write_was_sent;
      break;
    case MONGOC_ERROR_WRITE_CONCERN:  // applied on the primary, durability unknown
      o.ec = make_error_code(errc::ambiguous_result);
      o.ambiguous = write_was_sent;
      break;
    default:
      o.ec = make_error_code(errc::server_error);
      o.message = "server error " + std::to_string(e.code) + ": " + e.message;
      o.ambiguous = write_was_sent && is_retried_by_driver(e);
  }
  // Labelled by the driver (a network error) or the server: the driver resent the write, and
  // this error may be the resend's, whatever its kind (section 4 of docs/design.md).
  if (write_was_sent && reply && mongoc_error_has_label(reply, "RetryableWriteError")) o.ambiguous = true;
  return o;
}
template outcome<bool> classify<bool>(const bson_error_t&, bool, const bson_t*);

namespace {
// A heartbeat no write has carried before (docs/design.md section 2, step 2): every take, renewal
// and release writes a fresh random one instead of counting, so a write redone after a rollback
// (a renewal retried on the new primary) never recreates a state a waiter may have seen. Only
// inequality is ever asked of it. Non-negative, for readers of `status`.
std::int64_t new_beat() {
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  return static_cast<std::int64_t>(gen() >> 1);
}

template <class T>
outcome<T> failed(const bson_error_t& e, bool write_was_sent, const bson_t* reply = nullptr) {
  return failure_from<T>(classify<bool>(e, write_was_sent, reply));
}

// The writeConcern option of every write: built by libmongoc once per worker thread and setting
// (a worker serves one client's providers, which almost always share it), then copied as it is.
// Built afresh it cost each command about 2,000 instructions (a new mongoc_write_concern_t, its
// validation and encoding), on the way to the server.
void append_write_concern(bson_t* opts, const store_config& cfg) {
  struct built {
    bool any = false;  // a flag, not a marker value: every setting gets its own option
    write_concern durability = write_concern::majority;
    std::chrono::milliseconds timeout{0};
    bson_doc option;  // {writeConcern: {...}}
  };
  thread_local built last;
  if (!last.any || last.timeout != cfg.write_timeout || last.durability != cfg.durability) {
    bson_reinit(last.option.get());
    mongoc_write_concern_t* wc = mongoc_write_concern_new();
    if (cfg.durability == write_concern::majority)
      mongoc_write_concern_set_wmajority(wc, static_cast<std::int32_t>(cfg.write_timeout.count()));
    else
      mongoc_write_concern_set_w(wc, 1);
    mongoc_write_concern_append(wc, last.option.get());
    mongoc_write_concern_destroy(wc);
    last.any = true;
    last.durability = cfg.durability;
    last.timeout = cfg.write_timeout;
  }
  bson_concat(opts, last.option.get());
}

// {key: {$in: values}}
void append_in(bson_t* filter, const char* key, const std::vector<std::string>& values) {
  bson_t field, in;
  BSON_APPEND_DOCUMENT_BEGIN(filter, key, &field);
  BSON_APPEND_ARRAY_BEGIN(&field, "$in", &in);
  for (std::size_t i = 0; i < values.size(); ++i) append_str(&in, std::to_string(i).c_str(), values[i]);
  bson_append_array_end(&field, &in);
  bson_append_document_end(filter, &field);
}

void append_owner(bson_t* b, const char* key, std::string_view owner) {
  if (owner.empty()) bson_append_null(b, key, -1);
  else append_str(b, key, owner);
}


// update_one / update_many; value = matchedCount.
outcome<std::int64_t> update(mongoc_collection_t* coll, const store_config& cfg, const bson_t* filter,
                             const bson_t* change, bool many) {
  bson_doc opts, reply;
  append_write_concern(opts.get(), cfg);
  bson_error_t err;
  const bool ok = many ? mongoc_collection_update_many(coll, filter, change, opts.get(), reply.get(), &err)
                       : mongoc_collection_update_one(coll, filter, change, opts.get(), reply.get(), &err);
  if (!ok) return failed<std::int64_t>(err, true, reply.get());
  return success<std::int64_t>(get_int(reply.get(), "matchedCount"));
}

outcome<lock_doc> read_in(mongoc_collection_t* coll, std::string_view name, read_mode mode) {
  bson_doc filter, opts;
  append_str(filter.get(), "_id", name);
  BSON_APPEND_INT64(opts.get(), "limit", 1);
  mongoc_read_prefs_t* prefs = nullptr;
  build_read_opts(mode, opts.get(), &prefs);
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll, filter.get(), opts.get(), prefs);
  mongoc_read_prefs_destroy(prefs);
  const bson_t* doc = nullptr;
  outcome<lock_doc> out;
  bson_error_t err;
  if (mongoc_cursor_next(cur, &doc)) out.value = parse_lock(doc);
  else if (mongoc_cursor_error(cur, &err)) out = failed<lock_doc>(err, false);
  mongoc_cursor_destroy(cur);
  return out;
}

void append_meta(bson_t* b, const holder_meta& m) {
  append_str(b, "host", m.host);
  BSON_APPEND_INT64(b, "pid", m.pid);
  append_str(b, "label", m.label);
}

// The holder's end: the document changes (a new beat, so every waiter restarts its observation)
// and the holder's metadata goes. `owner` null: free, with idle_since (client time on purpose: it
// only feeds the TTL clean-up of free documents, never a correctness decision). Else
// broken_owner (lock_store.hpp), a holder nobody will renew: never idle, or the TTL index could
// delete it and let a waiter create it again at once, beside the old holder.
// `token`: the freed holder's: idle_since is never earlier than the time it was drawn at (token_ms,
// section 1), so a document is removed only once the server's clock has passed its token by
// idle_cleanup; -1: not known, no idle_since.
void set_owner_gone(bson_t* change, const char* owner, std::int64_t beat = new_beat(), std::int64_t token = 0) {
  bson_t set, unset;
  BSON_APPEND_DOCUMENT_BEGIN(change, "$set", &set);
  BSON_APPEND_INT64(&set, "beat", beat);
  if (owner) {
    BSON_APPEND_UTF8(&set, "owner", owner);
    BSON_APPEND_DATE_TIME(&set, "renewed_at", wall_ms());  // a hint for `status`, as for any holder
  } else {
    bson_append_null(&set, "owner", -1);
    if (token >= 0) BSON_APPEND_DATE_TIME(&set, "idle_since", std::max(wall_ms(), token_ms(token)));
  }
  bson_append_document_end(change, &set);
  BSON_APPEND_DOCUMENT_BEGIN(change, "$unset", &unset);
  if (owner) BSON_APPEND_UTF8(&unset, "idle_since", "");
  BSON_APPEND_UTF8(&unset, "host", "");
  BSON_APPEND_UTF8(&unset, "pid", "");
  BSON_APPEND_UTF8(&unset, "label", "");
  BSON_APPEND_UTF8(&unset, "value", "");
  bson_append_document_end(change, &unset);
}
void set_released(bson_t* change, std::int64_t beat = new_beat(), std::int64_t token = 0) {
  set_owner_gone(change, nullptr, beat, token);
}

// {key: {$in: [null, 0]}}: 0, or missing (the line's counters in a document from before the line).
void append_zero_or_missing(bson_t* filter, const char* key) {
  bson_t in, any;
  BSON_APPEND_DOCUMENT_BEGIN(filter, key, &in);
  BSON_APPEND_ARRAY_BEGIN(&in, "$in", &any);
  BSON_APPEND_NULL(&any, "0");
  BSON_APPEND_INT64(&any, "1", 0);
  bson_append_array_end(&in, &any);
  bson_append_document_end(filter, &in);
}
void set_broken(bson_t* change) { set_owner_gone(change, broken_owner); }

}  // namespace

lock_doc parse_lock(const bson_t* doc) {
  lock_doc d;
  d.exists = true;
  d.held.owner = get_str(doc, "owner");
  d.held.token = get_int(doc, "token");
  d.held.beat = get_int(doc, "beat");
  d.held.expiry = std::chrono::milliseconds{get_int(doc, "expiry_ms")};
  bson_iter_t it;
  if (bson_iter_init_find(&it, doc, "idle_since") && BSON_ITER_HOLDS_DATE_TIME(&it))
    d.idle_since_ms = bson_iter_date_time(&it);
  if (bson_has_field(doc, "host") || bson_has_field(doc, "pid") || bson_has_field(doc, "label") ||
      bson_has_field(doc, "value"))
    d.meta = std::make_shared<const holder_meta>(holder_meta{get_str(doc, "host"), get_int(doc, "pid"),
                                                             get_str(doc, "label"), get_str(doc, "value")});
  if (bson_iter_init_find(&it, doc, "acquired_at") && BSON_ITER_HOLDS_DATE_TIME(&it))
    d.acquired_at_ms = bson_iter_date_time(&it);
  if (bson_iter_init_find(&it, doc, "renewed_at") && BSON_ITER_HOLDS_DATE_TIME(&it))
    d.renewed_at_ms = bson_iter_date_time(&it);
  d.last_run_token = get_int(doc, "last_run_token");
  if (bson_has_field(doc, "kind"))  // a declaration (section 10)
    d.declared = std::make_shared<const declaration>(declaration{get_str(doc, "kind"), get_int(doc, "permits")});
  d.tickets = get_int(doc, "tickets");
  d.waiting = get_int(doc, "waiting");
  bson_iter_t line;
  if (bson_iter_init_find(&it, doc, "line") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &line)) {
    while (bson_iter_next(&line) && d.line.size() < 4 * max_line) {  // a hostile document stays bounded
      line_entry e{bson_iter_key(&line), 0};
      // Only what mongolock writes: an owner id (32 hex digits, so the key is safe to put back
      // into a filter) and an integer ticket.
      const bool owner_id = e.owner.size() == 32 && e.owner.find_first_not_of("0123456789abcdef") == std::string::npos;
      if (!owner_id || !(BSON_ITER_HOLDS_INT64(&line) || BSON_ITER_HOLDS_INT32(&line))) continue;
      e.ticket = bson_iter_as_int64(&line);
      d.line.push_back(std::move(e));
    }
    std::sort(d.line.begin(), d.line.end(), [](const line_entry& a, const line_entry& b) {
      return a.ticket != b.ticket ? a.ticket < b.ticket : a.owner < b.owner;
    });
  }
  return d;
}

error_code check_server(const server_info& info, std::string* why) {
  if (info.max_wire_version < min_wire_version) {
    if (why) *why = "MongoDB " + (info.version.empty() ? std::string("server") : info.version) +
                    " (wire version " + std::to_string(info.max_wire_version) +
                    ") is older than the minimum supported MongoDB 4.0";
    return make_error_code(errc::unsupported_server);
  }
  return {};
}

outcome<server_info> query_server(mongoc_client_t* client) {
  bson_doc cmd, reply, cmd2, reply2;
  BSON_APPEND_INT32(cmd.get(), "hello", 1);
  bson_error_t err;
  if (!mongoc_client_command_simple(client, "admin", cmd.get(), nullptr, reply.get(), &err))
    return failed<server_info>(err, false);
  outcome<server_info> out;
  out.value.max_wire_version = static_cast<int>(get_int(reply.get(), "maxWireVersion"));
  if (const auto max_bson = get_int(reply.get(), "maxBsonObjectSize"); max_bson > 0)
    out.value.max_bson_bytes = static_cast<std::size_t>(max_bson);
  bson_iter_t it;
  if (bson_iter_init_find(&it, reply.get(), "localTime") && BSON_ITER_HOLDS_DATE_TIME(&it))
    out.value.local_time_ms = bson_iter_date_time(&it);
  out.value.client_time_ms = wall_ms();
  BSON_APPEND_INT32(cmd2.get(), "buildInfo", 1);
  if (mongoc_client_command_simple(client, "admin", cmd2.get(), nullptr, reply2.get(), &err))
    out.value.version = get_str(reply2.get(), "version");
  return out;
}

outcome<server_info> prepare(mongoc_client_t* client, const store_config& cfg) {
  auto info = query_server(client);
  if (info.ec) return info;
  if (auto ec = check_server(info.value, &info.message)) {
    info.ec = ec;
    return info;
  }
  // TTL clean-up of long-idle free documents. Correctness never depends on it (the monitor runs
  // every 60 s at best); an index that exists with other options is left alone.
  bson_doc cmd, reply;
  bson_t indexes, index, key;
  append_str(cmd.get(), "createIndexes", cfg.collection);
  BSON_APPEND_ARRAY_BEGIN(cmd.get(), "indexes", &indexes);
  BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &index);
  BSON_APPEND_DOCUMENT_BEGIN(&index, "key", &key);
  BSON_APPEND_INT32(&key, "idle_since", 1);
  bson_append_document_end(&index, &key);
  BSON_APPEND_UTF8(&index, "name", "mongolock_idle_ttl");
  BSON_APPEND_INT64(&index, "expireAfterSeconds", cfg.idle_cleanup.count());
  bson_append_document_end(&indexes, &index);
  bson_append_array_end(cmd.get(), &indexes);
  bson_error_t err;
  if (!mongoc_client_write_command_with_opts(client, cfg.database.c_str(), cmd.get(), nullptr,
                                             reply.get(), &err))
    info.message = std::string("TTL index not created: ") + err.message;  // not fatal
  if (auto behind = clock_behind_warning(info.value, cfg.idle_cleanup); !behind.empty())
    info.message += (info.message.empty() ? "" : "; ") + behind;
  return info;
}

void build_read_opts(read_mode mode, bson_t* opts, mongoc_read_prefs_t** prefs) {
  // Never a secondary, whatever the URI's readPreference says: a lagging copy could repeat a
  // token or hide our own take.
  *prefs = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
  if (mode == read_mode::majority) {
    bson_t rc;
    BSON_APPEND_DOCUMENT_BEGIN(opts, "readConcern", &rc);
    BSON_APPEND_UTF8(&rc, "level", "majority");
    bson_append_document_end(opts, &rc);
  }
}

void build_swap(const take_request& t, std::int64_t now_ms, bson_t* filter, bson_t* change,
                std::optional<std::int64_t> beat) {
  append_str(filter, "_id", t.name);
  if (!t.observed.exists) {
    // The blind take (section 1): any free lock document below our token, or none (the caller
    // sends it as an upsert; the equality on owner null is replaced by the $set below). A
    // declaration has a kind: never a lock's to take.
    bson_t below, no_kind;
    bson_append_null(filter, "owner", -1);
    BSON_APPEND_DOCUMENT_BEGIN(filter, "token", &below);
    BSON_APPEND_INT64(&below, "$lt", t.token);
    bson_append_document_end(filter, &below);
    BSON_APPEND_DOCUMENT_BEGIN(filter, "kind", &no_kind);
    BSON_APPEND_BOOL(&no_kind, "$exists", false);
    bson_append_document_end(filter, &no_kind);
  } else {
    // Exactly what was observed: free, or the same expired holder at the same heartbeat.
    append_owner(filter, "owner", t.observed.held.owner);
    BSON_APPEND_INT64(filter, "token", t.observed.held.token);
    // A held document at the heartbeat observed (section 2). A free one is matched on (null,
    // token) alone: a take always raises the token, so a free state at one token exists once.
    if (!t.hand_over && !t.observed.held.owner.empty()) BSON_APPEND_INT64(filter, "beat", t.observed.held.beat);
  }
  // Nobody joined since the read: `waiting` as it was (0 also matches a missing field). A count
  // the read could not explain (entries mongolock did not write) is a value like any other.
  if (t.nobody_waiting) {
    if (t.observed.waiting == 0) append_zero_or_missing(filter, "waiting");
    else BSON_APPEND_INT64(filter, "waiting", t.observed.waiting);
  }
  for (auto& e : t.leaving) BSON_APPEND_INT64(filter, ("line." + e.owner).c_str(), e.ticket);
  // The enrolled entry takes the next ticket: only if nobody took it since (0 matches missing).
  if (t.enroll) {
    if (t.enroll->ticket == 0) append_zero_or_missing(filter, "tickets");
    else BSON_APPEND_INT64(filter, "tickets", t.enroll->ticket);
  }
  bson_t set, unset;
  BSON_APPEND_DOCUMENT_BEGIN(change, "$set", &set);
  append_str(&set, "owner", t.owner);
  BSON_APPEND_INT64(&set, "token", t.token);
  BSON_APPEND_INT64(&set, "beat", beat ? *beat : new_beat());
  BSON_APPEND_INT64(&set, "expiry_ms", t.expiry.count());
  BSON_APPEND_DATE_TIME(&set, "acquired_at", now_ms);
  BSON_APPEND_DATE_TIME(&set, "renewed_at", now_ms);
  append_meta(&set, t.meta);
  if (t.enroll) {
    BSON_APPEND_INT64(&set, ("line." + t.enroll->owner).c_str(), t.enroll->ticket);
    BSON_APPEND_INT64(&set, "tickets", t.enroll->ticket + 1);
  }
  bson_append_document_end(change, &set);
  BSON_APPEND_DOCUMENT_BEGIN(change, "$unset", &unset);
  BSON_APPEND_UTF8(&unset, "idle_since", "");
  BSON_APPEND_UTF8(&unset, "value", "");  // a new holder has proclaimed nothing yet
  for (auto& e : t.leaving) BSON_APPEND_UTF8(&unset, ("line." + e.owner).c_str(), "");
  bson_append_document_end(change, &unset);
  const auto joined = (t.enroll ? 1 : 0) - static_cast<std::int64_t>(t.leaving.size());
  if (joined != 0) {
    bson_t inc;
    BSON_APPEND_DOCUMENT_BEGIN(change, "$inc", &inc);
    BSON_APPEND_INT64(&inc, "waiting", joined);
    bson_append_document_end(change, &inc);
  }
}

void build_join(std::string_view name, std::string_view owner, std::int64_t ticket, bson_t* filter, bson_t* change) {
  append_str(filter, "_id", name);
  if (ticket == 0) append_zero_or_missing(filter, "tickets");
  else BSON_APPEND_INT64(filter, "tickets", ticket);
  bson_t set, inc;
  BSON_APPEND_DOCUMENT_BEGIN(change, "$set", &set);
  BSON_APPEND_INT64(&set, ("line." + std::string(owner)).c_str(), ticket);
  BSON_APPEND_INT64(&set, "tickets", ticket + 1);
  bson_append_document_end(change, &set);
  BSON_APPEND_DOCUMENT_BEGIN(change, "$inc", &inc);
  BSON_APPEND_INT64(&inc, "waiting", 1);
  bson_append_document_end(change, &inc);
}

void build_leave(std::string_view name, std::string_view owner, bson_t* filter, bson_t* change) {
  const std::string key = "line." + std::string(owner);
  append_str(filter, "_id", name);
  bson_t exists, unset, inc;
  BSON_APPEND_DOCUMENT_BEGIN(filter, key.c_str(), &exists);
  BSON_APPEND_BOOL(&exists, "$exists", true);
  bson_append_document_end(filter, &exists);
  BSON_APPEND_DOCUMENT_BEGIN(change, "$unset", &unset);
  BSON_APPEND_UTF8(&unset, key.c_str(), "");
  bson_append_document_end(change, &unset);
  BSON_APPEND_DOCUMENT_BEGIN(change, "$inc", &inc);
  BSON_APPEND_INT64(&inc, "waiting", -1);
  bson_append_document_end(change, &inc);
}

// A real modification ($inc), never a no-op: a no-op update is not replicated, so on a deposed
// primary it could be acknowledged with w: majority against a state where the entry was gone.
void build_refresh(std::string_view name, std::string_view owner, std::int64_t ticket, bson_t* filter, bson_t* change) {
  append_str(filter, "_id", name);
  BSON_APPEND_INT64(filter, ("line." + std::string(owner)).c_str(), ticket);
  bson_t inc;
  BSON_APPEND_DOCUMENT_BEGIN(change, "$inc", &inc);
  BSON_APPEND_INT64(&inc, "line_beat", 1);
  bson_append_document_end(change, &inc);
}

outcome<lock_doc> read_lock(mongoc_client_t* client, const store_config& cfg, std::string_view name, read_mode mode) {
  collection_ref coll(client, cfg.database, cfg.collection);
  return read_in(coll.get(), name, mode);
}

namespace {
// The documents of `names` in one find (_id $in), in the order of `names`; a missing one is not
// `exists`. A semaphore's look (read_locks), the renewal's fallback (which_are_ours) and the read
// that judges a grouped command (judge_each).
outcome<std::vector<lock_doc>> find_each(mongoc_collection_t* coll, const std::vector<std::string>& names,
                                         read_mode mode) {
  bson_doc filter, opts;
  build_find_each(names, filter.get());
  mongoc_read_prefs_t* prefs = nullptr;
  build_read_opts(mode, opts.get(), &prefs);
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll, filter.get(), opts.get(), prefs);
  mongoc_read_prefs_destroy(prefs);
  outcome<std::vector<lock_doc>> out;
  out.value.resize(names.size());
  // Each document to its places by a lookup, not a scan of `names` (linear in the find's size).
  std::unordered_map<std::string_view, std::vector<std::size_t>> places;
  for (std::size_t i = 0; i < names.size(); ++i) places[names[i]].push_back(i);
  const bson_t* doc = nullptr;
  while (mongoc_cursor_next(cur, &doc)) {
    const auto it = places.find(get_str(doc, "_id"));
    if (it == places.end()) continue;
    const auto d = parse_lock(doc);
    for (const auto i : it->second) out.value[i] = d;
  }
  bson_error_t err;
  if (mongoc_cursor_error(cur, &err)) out = failed<std::vector<lock_doc>>(err, false);
  mongoc_cursor_destroy(cur);
  return out;
}

// How a find after our own write reads: majority read concern under majority writes; under w:1 a
// majority read may not include our write yet, so the primary's.
read_mode reading_our_writes(const store_config& cfg) {
  return cfg.durability == write_concern::majority ? read_mode::majority : read_mode::primary;
}
}  // namespace

outcome<std::vector<lock_doc>> read_locks(mongoc_client_t* client, const store_config& cfg,
                                          const std::vector<std::string>& names, read_mode mode) {
  collection_ref coll(client, cfg.database, cfg.collection);
  return find_each(coll.get(), names, mode);
}

outcome<std::vector<named_doc>> read_all(mongoc_client_t* client, const store_config& cfg) {
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, opts;
  bson_t id, sort;
  BSON_APPEND_DOCUMENT_BEGIN(filter.get(), "_id", &id);
  BSON_APPEND_UTF8(&id, "$type", "string");  // skips the declarations of earlier versions
  bson_append_document_end(filter.get(), &id);
  bson_t no_kind;  // and declarations (section 10): not locks
  BSON_APPEND_DOCUMENT_BEGIN(filter.get(), "kind", &no_kind);
  BSON_APPEND_BOOL(&no_kind, "$exists", false);
  bson_append_document_end(filter.get(), &no_kind);
  BSON_APPEND_DOCUMENT_BEGIN(opts.get(), "sort", &sort);
  BSON_APPEND_INT32(&sort, "_id", 1);
  bson_append_document_end(opts.get(), &sort);
  mongoc_read_prefs_t* prefs = nullptr;
  build_read_opts(read_mode::primary, opts.get(), &prefs);
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll.get(), filter.get(), opts.get(), prefs);
  mongoc_read_prefs_destroy(prefs);
  outcome<std::vector<named_doc>> out;
  const bson_t* doc = nullptr;
  while (mongoc_cursor_next(cur, &doc)) out.value.push_back({get_str(doc, "_id"), parse_lock(doc)});
  bson_error_t err;
  if (mongoc_cursor_error(cur, &err)) out = failed<std::vector<named_doc>>(err, false);
  mongoc_cursor_destroy(cur);
  return out;
}

namespace {
// A find after our own write (reading_our_writes). The caller destroys the cursor.
mongoc_cursor_t* find_what_we_wrote(mongoc_collection_t* coll, const bson_t* filter, const store_config& cfg) {
  bson_doc read_opts;
  mongoc_read_prefs_t* prefs = nullptr;
  build_read_opts(reading_our_writes(cfg), read_opts.get(), &prefs);
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll, filter, read_opts.get(), prefs);
  mongoc_read_prefs_destroy(prefs);
  return cur;
}
}  // namespace

// A declaration is the name's own document (docs/design.md section 10): {_id: name, kind, permits},
// never idle, so the TTL index never removes it. One round trip when it is there already or is
// new: an upsert that matches exactly our declaration, or inserts it. An E11000 means the document
// is something else (another declaration, or a lock's document): a read says what.
outcome<declaration> declare(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                             const declaration& d) {
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change, opts;
  bson_t insert;
  append_str(filter.get(), "_id", name);
  append_str(filter.get(), "kind", d.kind);
  BSON_APPEND_INT64(filter.get(), "permits", d.permits);
  BSON_APPEND_DOCUMENT_BEGIN(change.get(), "$setOnInsert", &insert);
  BSON_APPEND_DATE_TIME(&insert, "declared_at", wall_ms());  // for operators only
  bson_append_document_end(change.get(), &insert);
  append_write_concern(opts.get(), cfg);
  BSON_APPEND_BOOL(opts.get(), "upsert", true);
  bson_doc by_id;
  append_str(by_id.get(), "_id", name);
  outcome<declaration> out;
  // Twice at most: a lock's idle document may be removed by the TTL index between the two.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bson_error_t err;
    if (mongoc_collection_update_one(coll.get(), filter.get(), change.get(), opts.get(), nullptr, &err))
      return success(d);
    if (!is_duplicate_key(err)) return failed<declaration>(err, true);
    mongoc_cursor_t* cur = find_what_we_wrote(coll.get(), by_id.get(), cfg);
    const bson_t* doc = nullptr;
    const bool found = mongoc_cursor_next(cur, &doc);
    if (found) {
      const auto seen = parse_lock(doc);
      out = success(seen.declared ? *seen.declared : declaration{"lock", 1});
    } else if (mongoc_cursor_error(cur, &err)) {
      out = failed<declaration>(err, false);
    } else {
      out.ec = make_error_code(errc::server_error), out.message = "the document of '" + std::string(name) + "' vanished";
    }
    mongoc_cursor_destroy(cur);
    if (found || out.ec != errc::server_error) break;
  }
  return out;
}

outcome<bool> take(mongoc_client_t* client, const store_config& cfg, const take_request& t) {
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change;
  build_swap(t, wall_ms(), filter.get(), change.get());
  if (!t.observed.exists) {  // the blind take: an upsert (build_swap)
    bson_doc opts, reply;
    append_write_concern(opts.get(), cfg);
    BSON_APPEND_BOOL(opts.get(), "upsert", true);
    bson_error_t err;
    if (mongoc_collection_update_one(coll.get(), filter.get(), change.get(), opts.get(), reply.get(), &err))
      return success(true);  // matched or inserted: the filter admits only a document ours to take
    // Not taken: the document is there and not ours to take, as far as this answer goes. The
    // driver's resend of an upsert that applied is answered from the session's record; but a
    // resend answered before its first attempt arrived (held up at a router) says nothing of that
    // attempt, so the acquire keeps this send as the earliest a take of its token may have
    // landed (docs/design.md section 4).
    if (is_duplicate_key(err)) return success(false);
    return failed<bool>(err, true, reply.get());
  }
  auto r = update(coll.get(), cfg, filter.get(), change.get(), false);
  auto out = failure_from<bool>(r);
  out.value = !r.ec && r.value == 1;
  return out;
}

void build_renewal(const std::vector<held_lease>& held, std::chrono::milliseconds expiry, std::int64_t now_ms,
                   bson_t* filter, bson_t* change, const holder_meta* holder) {
  auto append_one = [](bson_t* b, const held_lease& h) {
    append_str(b, "_id", h.name);
    append_str(b, "owner", h.owner);
    BSON_APPEND_INT64(b, "token", h.token);
  };
  if (held.size() == 1) {
    append_one(filter, held.front());
  } else {
    bson_t any;
    BSON_APPEND_ARRAY_BEGIN(filter, "$or", &any);
    for (std::size_t i = 0; i < held.size(); ++i) {
      bson_t one;
      BSON_APPEND_DOCUMENT_BEGIN(&any, std::to_string(i).c_str(), &one);
      append_one(&one, held[i]);
      bson_append_document_end(&any, &one);
    }
    bson_append_array_end(filter, &any);
  }
  bson_t set;
  BSON_APPEND_DOCUMENT_BEGIN(change, "$set", &set);
  BSON_APPEND_INT64(&set, "beat", new_beat());  // one for the batch: (owner, token) tell its leases apart
  BSON_APPEND_INT64(&set, "expiry_ms", expiry.count());
  BSON_APPEND_DATE_TIME(&set, "renewed_at", now_ms);
  if (holder) append_meta(&set, *holder);
  bson_append_document_end(change, &set);
}

namespace {
// After a renewal that matched fewer documents than it named: which of them are still ours. A
// document not matched by the update cannot have become ours since (nobody else writes our owner
// id and token), so "ours now" is exactly "renewed".
outcome<std::vector<bool>> which_are_ours(mongoc_collection_t* coll, const std::vector<held_lease>& held) {
  std::vector<std::string> names;
  for (const auto& h : held) names.push_back(h.name);
  const auto seen = find_each(coll, names, read_mode::primary);
  if (seen.ec) return failure_from<std::vector<bool>>(seen);
  outcome<std::vector<bool>> out;
  out.value.assign(held.size(), false);
  for (std::size_t i = 0; i < held.size(); ++i) {
    const auto& d = seen.value[i];
    out.value[i] = d.exists && d.held.owner == held[i].owner && d.held.token == held[i].token;
  }
  return out;
}
}  // namespace

outcome<std::vector<bool>> renew(mongoc_client_t* client, const store_config& cfg, const std::vector<held_lease>& held,
                                 std::chrono::milliseconds expiry) {
  if (held.empty()) return {};
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change;
  build_renewal(held, expiry, wall_ms(), filter.get(), change.get(), &cfg.holder);
  auto r = update(coll.get(), cfg, filter.get(), change.get(), held.size() > 1);
  if (r.ec) return failure_from<std::vector<bool>>(r);
  if (r.value == static_cast<std::int64_t>(held.size())) return success(std::vector<bool>(held.size(), true));
  if (held.size() == 1) return success(std::vector<bool>{false});
  return which_are_ours(coll.get(), held);
}

void build_release(std::string_view name, std::string_view owner, std::int64_t token, bson_t* filter, bson_t* change,
                   std::optional<std::int64_t> beat) {
  append_str(filter, "_id", name);
  append_str(filter, "owner", owner);  // never frees someone else's lock
  BSON_APPEND_INT64(filter, "token", token);
  set_released(change, beat ? *beat : new_beat(), token);
}

outcome<bool> release(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                      std::string_view owner, std::int64_t token) {
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change;
  build_release(name, owner, token, filter.get(), change.get());
  auto r = update(coll.get(), cfg, filter.get(), change.get(), false);
  auto out = failure_from<bool>(r);
  out.value = !r.ec && r.value == 1;
  return out;
}

namespace {
// Whether `key` is a non-empty array in `doc`.
bool has_items(const bson_t* doc, const char* key) {
  bson_iter_t it, item;
  return bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &item) &&
         bson_iter_next(&item);
}

// Every error of a grouped command after it was sent is ambiguous, whatever its kind: one
// statement's write error (a server error) says nothing about the others, which may have applied.
// Only a command that never left (no server selected) or was refused whole (not authorized) is not.
outcome<std::vector<grouped_outcome>> grouped_failure(const bson_error_t& e) {
  auto o = classify<bool>(e, true);
  o.ambiguous = e.domain != MONGOC_ERROR_SERVER_SELECTION && o.ec != errc::not_authorized;
  return failure_from<std::vector<grouped_outcome>>(o);
}

// After a grouped command that matched fewer statements than it sent: each statement's document,
// read back as our own write (reading_our_writes), judged by `judge` (model/grouped_write.hpp).
outcome<std::vector<grouped_outcome>> judge_each(mongoc_collection_t* coll, const store_config& cfg,
                                                 const std::vector<grouped_write>& writes) {
  outcome<std::vector<grouped_outcome>> out;
  out.value.assign(writes.size(), grouped_outcome::unknown);
  std::vector<std::string> names;
  for (const auto& w : writes)
    if (judged_by_reading(w)) names.push_back(w.name());
  if (names.empty()) return out;  // leaves only: nothing a read could tell
  const auto seen = find_each(coll, names, reading_our_writes(cfg));
  if (seen.ec) {
    // The command went through: any statement may have applied, whatever stopped the read.
    auto failed_read = failure_from<std::vector<grouped_outcome>>(seen);
    failed_read.ambiguous = true;
    return failed_read;
  }
  for (std::size_t i = 0; i < writes.size(); ++i) {  // a document not found is judged as missing
    const auto at = std::find(names.begin(), names.end(), writes[i].name());
    out.value[i] = judge(writes[i], at != names.end() ? seen.value[static_cast<std::size_t>(at - names.begin())] : lock_doc{});
  }
  return out;
}
}  // namespace

outcome<std::vector<grouped_outcome>> write_grouped(mongoc_client_t* client, const store_config& cfg,
                                                    std::vector<grouped_write> writes) {
  if (writes.empty()) return {};
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc opts;
  BSON_APPEND_BOOL(opts.get(), "ordered", false);  // one statement's miss must not stop the rest
  append_write_concern(opts.get(), cfg);
  mongoc_bulk_operation_t* bulk = mongoc_collection_create_bulk_operation_with_opts(coll.get(), opts.get());
  const auto now = wall_ms();
  bson_error_t err;
  bson_doc upsert;
  BSON_APPEND_BOOL(upsert.get(), "upsert", true);
  for (auto& w : writes) {
    w.beat = new_beat();
    bson_doc filter, change;
    switch (w.what) {
      case grouped_write::kind::take: build_swap(w.take, now, filter.get(), change.get(), w.beat); break;
      case grouped_write::kind::release:
        build_release(w.release.name, w.release.owner, w.release.token, filter.get(), change.get(), w.beat);
        break;
      case grouped_write::kind::join: build_join(w.line.name, w.line.owner, w.line.ticket, filter.get(), change.get()); break;
      case grouped_write::kind::leave: build_leave(w.line.name, w.line.owner, filter.get(), change.get()); break;
    }
    const bool blind = w.what == grouped_write::kind::take && !w.take.observed.exists;
    if (!mongoc_bulk_operation_update_one_with_opts(bulk, filter.get(), change.get(), blind ? upsert.get() : nullptr,
                                                     &err)) {
      mongoc_bulk_operation_destroy(bulk);
      return failure_from<std::vector<grouped_outcome>>(classify<bool>(err, false));  // nothing was sent
    }
  }
  bson_doc reply;
  const bool ok = mongoc_bulk_operation_execute(bulk, reply.get(), &err) != 0;
  mongoc_bulk_operation_destroy(bulk);
  // A blind take's E11000 is its "not taken" (take()): the others are judged as after a short count.
  // The emulator stops an unordered command at that error, so its later statements were not sent:
  // a read shows each one's document as it left it, judged unknown (a lost reply, re-checked).
  const bool only_a_duplicate = !ok && is_duplicate_key(err) && !has_items(reply.get(), "writeConcernErrors");
  if (!ok && !only_a_duplicate) return grouped_failure(err);
  if (ok && get_int(reply.get(), "nMatched") + get_int(reply.get(), "nUpserted") == static_cast<std::int64_t>(writes.size()))
    return success(std::vector<grouped_outcome>(writes.size(), grouped_outcome::applied));
  return judge_each(coll.get(), cfg, writes);
}

outcome<bool> proclaim(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                       std::string_view owner, std::int64_t token, std::string_view value) {
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change;
  append_str(filter.get(), "_id", name);
  append_str(filter.get(), "owner", owner);  // only the holder itself speaks for its term
  BSON_APPEND_INT64(filter.get(), "token", token);
  bson_t set;
  BSON_APPEND_DOCUMENT_BEGIN(change.get(), "$set", &set);
  append_str(&set, "value", value);
  bson_append_document_end(change.get(), &set);
  auto r = update(coll.get(), cfg, filter.get(), change.get(), false);
  auto out = failure_from<bool>(r);
  out.value = !r.ec && r.value == 1;
  return out;
}

outcome<bool> record_run(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                         std::string_view owner, std::int64_t token) {
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change;
  append_str(filter.get(), "_id", name);
  append_str(filter.get(), "owner", owner);  // only a run that still holds the lock completed under it
  BSON_APPEND_INT64(filter.get(), "token", token);
  bson_t set;
  BSON_APPEND_DOCUMENT_BEGIN(change.get(), "$set", &set);
  BSON_APPEND_INT64(&set, "last_run_token", token);
  BSON_APPEND_DATE_TIME(&set, "last_run_at", wall_ms());  // for `status` only, as every date here
  bson_append_document_end(change.get(), &set);
  auto r = update(coll.get(), cfg, filter.get(), change.get(), false);
  auto out = failure_from<bool>(r);
  out.value = !r.ec && r.value == 1;
  return out;
}

outcome<std::string> force_release(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                                   bool immediate) {
  collection_ref coll(client, cfg.database, cfg.collection);
  auto seen = read_in(coll.get(), name, read_mode::primary);
  if (seen.ec) return failure_from<std::string>(seen);
  if (!seen.value.exists || seen.value.held.owner.empty()) return {};
  if (seen.value.held.owner == broken_owner && !immediate) return {};  // already broken
  bson_doc filter, change;
  append_str(filter.get(), "_id", name);
  append_str(filter.get(), "owner", seen.value.held.owner);
  BSON_APPEND_INT64(filter.get(), "token", seen.value.held.token);
  if (immediate) set_released(change.get(), new_beat(), seen.value.held.token);
  else set_broken(change.get());
  auto r = update(coll.get(), cfg, filter.get(), change.get(), false);
  if (r.ec) return failure_from<std::string>(r);
  return success(r.value == 1 ? seen.value.held.owner : std::string());
}

namespace {
// One update_one built by `build(filter, change)`; value: whether it matched a document.
template <class Build>
outcome<bool> update_one_matched(mongoc_client_t* client, const store_config& cfg, Build build) {
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change;
  build(filter.get(), change.get());
  auto r = update(coll.get(), cfg, filter.get(), change.get(), false);
  auto out = failure_from<bool>(r);
  out.value = !r.ec && r.value == 1;
  return out;
}
}  // namespace

outcome<bool> join_line(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                        std::string_view owner, std::int64_t ticket) {
  return update_one_matched(client, cfg, [&](bson_t* f, bson_t* c) { build_join(name, owner, ticket, f, c); });
}

outcome<bool> leave_line(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                         std::string_view owner) {
  return update_one_matched(client, cfg, [&](bson_t* f, bson_t* c) { build_leave(name, owner, f, c); });
}

outcome<bool> refresh_line(mongoc_client_t* client, const store_config& cfg, std::string_view name,
                           std::string_view owner, std::int64_t ticket) {
  return update_one_matched(client, cfg, [&](bson_t* f, bson_t* c) { build_refresh(name, owner, ticket, f, c); });
}

// By _id first: the owner alone has no index, and an update_many on it scans the collection.
// The tokens are not known here, so no idle_since (section 1: never earlier than the token's
// time): the TTL clean-up leaves such a document until a later release.
void build_find_each(const std::vector<std::string>& names, bson_t* filter) { append_in(filter, "_id", names); }

void build_release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                          bson_t* filter, bson_t* change) {
  append_in(filter, "_id", names);
  append_in(filter, "owner", owners);
  set_owner_gone(change, nullptr, new_beat(), -1);
}

outcome<std::int64_t> release_owners(mongoc_client_t* client, const store_config& cfg, const std::vector<std::string>& names,
                                     const std::vector<std::string>& owners) {
  if (owners.empty() || names.empty()) return {};
  collection_ref coll(client, cfg.database, cfg.collection);
  bson_doc filter, change;
  build_release_owners(names, owners, filter.get(), change.get());
  return update(coll.get(), cfg, filter.get(), change.get(), true);
}

}  // namespace mongolock::detail
