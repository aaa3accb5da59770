#include "store/fence_commands.hpp"

#include <boost/asio/error.hpp>

#include <cmath>
#include <memory>
#include <set>
#include <string_view>

#include "store/bson_util.hpp"
#include "store/plain_json.hpp"
#include "store/mongo_commands.hpp"
#include "mongolock/error.hpp"

namespace mongolock::detail {

using boost::system::error_code;

namespace {

error_code fail(errc e, std::string* why, std::string text) {
  if (why) *why = std::move(text);
  return make_error_code(e);
}

// A repeated top-level key: the server reads every copy (two $or are both applied) while the
// builders below read one, so the fence would not be what the server checks, or a second $set
// would be lost. Refused rather than merged: the caller meant something and should say it once.
error_code no_repeated_keys(const bson_t* doc, const char* what, std::string* why) {
  const auto repeated = [&](const char* key) {
    return fail(errc::invalid_document, why, std::string("the ") + what + " repeats the top-level key '" + key + "'");
  };
  // Filters and updates have a few top-level keys: compared pairwise without allocating; a set
  // past that, so a large replacement is not quadratic.
  constexpr std::size_t few = 16;
  std::string_view small[few];
  std::size_t n = 0;
  std::set<std::string_view> seen;
  bson_iter_t it;
  bson_iter_init(&it, doc);
  while (bson_iter_next(&it)) {
    const std::string_view key = bson_iter_key(&it);
    if (n < few) {
      for (std::size_t i = 0; i < n; ++i)
        if (small[i] == key) return repeated(bson_iter_key(&it));
      small[n++] = key;
      continue;
    }
    if (seen.empty()) seen.insert(small, small + few);
    if (!seen.insert(key).second) return repeated(bson_iter_key(&it));
  }
  return {};
}

// One JSON object and nothing after it but blanks. libbson's own bson_init_from_json destroys its
// output when it fails (the caller's bson_t, destroyed again by its owner), and it and
// bson_new_from_json read the first document only, ignoring the rest: the reader is driven here,
// into a document this function owns, and asked for a second one.
error_code parse_json(const std::string& text, const char* what, bson_t* out, std::string* why) {
  const auto invalid = [&](const bson_error_t& err) {
    return fail(errc::invalid_document, why,
                std::string("the ") + what + " is not valid extended JSON: " + err.message);
  };
  bson_json_reader_t* reader = bson_json_data_reader_new(false, 0);
  bson_json_data_reader_ingest(reader, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  bson_doc first, second;
  bson_error_t err{};
  error_code ec;
  if (bson_json_reader_read(reader, first.get(), &err) != 1) {
    ec = invalid(err);
  } else if (const int more = bson_json_reader_read(reader, second.get(), &err); more != 0) {
    ec = more < 0 ? invalid(err)
                  : fail(errc::invalid_document, why, std::string("the ") + what + " holds more than one JSON object");
  }
  bson_json_reader_destroy(reader);
  if (!ec) bson_concat(out, first.get());
  return ec;
}

// Text must be one JSON object: libbson also reads a top-level array as a document ("0", "1"...).
error_code parse(const fence_input& in, const char* what, bson_t* out, std::string* why) {
  if (in.is_bson) {
    bson_t view;
    std::size_t bad = 0;
    if (!bson_init_static(&view, reinterpret_cast<const std::uint8_t*>(in.data.data()), in.data.size()) ||
        !bson_validate(&view, BSON_VALIDATE_UTF8, &bad))
      return fail(errc::invalid_document, why, std::string("the ") + what + " is not a valid BSON document");
    if (auto ec = no_repeated_keys(&view, what, why)) return ec;
    bson_concat(out, &view);
    return {};
  }
  const auto first = in.data.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || in.data[first] != '{')
    return fail(errc::invalid_document, why, std::string("the ") + what + " is not a JSON object");
  // The plain subset is read without libbson's reader, which allocates and clears about 40 kB a
  // text (store/plain_json.hpp); anything else, and every error, is libbson's.
  if (!parse_plain_json(in.data, out))
    if (auto ec = parse_json(in.data, what, out, why)) return ec;
  return no_repeated_keys(out, what, why);
}

// A path that is the fence field or inside it. The field holds no '.', so a shorter key cannot
// contain it.
bool touches(std::string_view path, std::string_view field) {
  return path == field || (path.size() > field.size() && path.starts_with(field) && path[field.size()] == '.');
}

// The clause that lets the write through: {$or: [{F: {$lte: token}}, {F: {$exists: false}}]}.
// A fence that is not a number (a string, null) satisfies neither: such a document is refused.
void append_fence_or(bson_t* b, std::string_view field, std::int64_t token) {
  const int f_len = static_cast<int>(field.size());  // at most 128 bytes (check_fence_request)
  bson_t arr, lte_clause, lte, missing_clause, missing;
  BSON_APPEND_ARRAY_BEGIN(b, "$or", &arr);
  BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &lte_clause);
  bson_append_document_begin(&lte_clause, field.data(), f_len, &lte);
  BSON_APPEND_INT64(&lte, "$lte", token);
  bson_append_document_end(&lte_clause, &lte);
  bson_append_document_end(&arr, &lte_clause);
  BSON_APPEND_DOCUMENT_BEGIN(&arr, "1", &missing_clause);
  bson_append_document_begin(&missing_clause, field.data(), f_len, &missing);
  BSON_APPEND_BOOL(&missing, "$exists", false);
  bson_append_document_end(&missing_clause, &missing);
  bson_append_document_end(&arr, &missing_clause);
  bson_append_array_end(b, &arr);
}

// The caller's top-level fields stay top-level, so an upsert still takes its _id from the filter
// (the emulator takes nothing from inside an $and and would insert a second document under a new
// ObjectId; checked). Only the caller's own $and / $or move into one $and with the fence clause.
error_code build_filter(const bson_t* user, std::string_view field, std::int64_t token, bson_t* out,
                        std::string* why) {
  bson_iter_t it;
  bool has_and = false, has_or = false;
  bson_iter_init(&it, user);
  while (bson_iter_next(&it)) {
    const std::string_view key = bson_iter_key(&it);
    if (key == "$and" || key == "$or") {
      if (!BSON_ITER_HOLDS_ARRAY(&it))
        return fail(errc::invalid_document, why, "the filter's " + std::string(key) + " is not an array");
      (key == "$and" ? has_and : has_or) = true;
      continue;
    }
    if (!bson_append_iter(out, nullptr, 0, &it)) return fail(errc::invalid_document, why, "the filter is too large");
  }
  if (!has_and && !has_or) {
    append_fence_or(out, field, token);
    return {};
  }
  bson_t all;
  int n = 0;
  BSON_APPEND_ARRAY_BEGIN(out, "$and", &all);
  if (has_and && bson_iter_init_find(&it, user, "$and")) {
    bson_iter_t inner;
    bson_iter_recurse(&it, &inner);
    while (bson_iter_next(&inner)) bson_append_iter(&all, std::to_string(n++).c_str(), -1, &inner);
  }
  if (has_or && bson_iter_init_find(&it, user, "$or")) {
    bson_t clause;
    const std::string key = std::to_string(n++);
    BSON_APPEND_DOCUMENT_BEGIN(&all, key.c_str(), &clause);
    bson_append_iter(&clause, "$or", -1, &it);
    bson_append_document_end(&all, &clause);
  }
  bson_t fence_clause;
  const std::string key = std::to_string(n);
  BSON_APPEND_DOCUMENT_BEGIN(&all, key.c_str(), &fence_clause);
  append_fence_or(&fence_clause, field, token);
  bson_append_document_end(&all, &fence_clause);
  bson_append_array_end(out, &all);
  return {};
}

// An upsert must name one document by an _id equality at the top level: then a fence that
// refuses the match makes the insert collide with the existing _id (E11000) instead of adding a
// second document (docs/design.md section 15).
bool pins_id(const bson_t* filter) {
  bson_iter_t it, inner;
  if (!bson_iter_init_find(&it, filter, "_id")) return false;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return !BSON_ITER_HOLDS_REGEX(&it);
  bson_iter_recurse(&it, &inner);
  return !(bson_iter_next(&inner) && bson_iter_key(&inner)[0] == '$');
}

// Update operators: every key an operator; none may touch the fence (this write sets it, and a
// caller who lowered or removed it would undo the fence). Then $set gains {F: token}: under the
// filter's clause the fence is at most the token, so setting it is what $max would do (the
// emulator has no $max; docs/design.md section 15).
error_code build_update(const bson_t* user, std::string_view field, std::int64_t token, bson_t* out,
                        std::string* why) {
  bson_iter_t it, ops;
  if (bson_count_keys(user) == 0) return fail(errc::invalid_document, why, "the update is empty");
  const auto touched = [&] {
    return fail(errc::invalid_document, why,
                "the update touches the fence field '" + std::string(field) + "', which the fenced write sets");
  };
  bson_iter_init(&it, user);
  while (bson_iter_next(&it)) {
    const std::string_view op = bson_iter_key(&it);
    if (op.empty() || op[0] != '$')
      return fail(errc::invalid_document, why,
                  "the update mixes operators and plain fields ('" + std::string(op) + "'): use a replacement");
    if (!BSON_ITER_HOLDS_DOCUMENT(&it))
      return fail(errc::invalid_document, why, "the update's " + std::string(op) + " is not a document");
    bson_iter_recurse(&it, &ops);
    while (bson_iter_next(&ops)) {
      if (touches(bson_iter_key(&ops), field)) return touched();
      if (op == "$rename" && BSON_ITER_HOLDS_UTF8(&ops) && touches(bson_iter_utf8(&ops, nullptr), field))
        return touched();
    }
    if (op != "$set") bson_append_iter(out, nullptr, 0, &it);
  }
  bson_t set;
  BSON_APPEND_DOCUMENT_BEGIN(out, "$set", &set);
  if (bson_iter_init_find(&it, user, "$set")) {
    bson_iter_recurse(&it, &ops);
    while (bson_iter_next(&ops)) bson_append_iter(&set, nullptr, 0, &ops);
  }
  bson_append_int64(&set, field.data(), static_cast<int>(field.size()), token);
  bson_append_document_end(out, &set);
  return {};
}

error_code build_replacement(const bson_t* user, std::string_view field, std::int64_t token, bson_t* out,
                             std::string* why) {
  bson_iter_t it;
  bson_iter_init(&it, user);
  while (bson_iter_next(&it)) {
    const std::string_view key = bson_iter_key(&it);
    if (!key.empty() && key[0] == '$')
      return fail(errc::invalid_document, why, "a replacement holds no operators ('" + std::string(key) + "')");
    if (touches(key, field))
      return fail(errc::invalid_document, why,
                  "the replacement holds the fence field '" + std::string(field) + "', which the fenced write sets");
    bson_append_iter(out, nullptr, 0, &it);
  }
  BSON_APPEND_INT64(out, std::string(field).c_str(), token);
  return {};
}

void append_write_concern(bson_t* opts, const fence_request& r) {
  mongoc_write_concern_t* wc = mongoc_write_concern_new();
  if (r.durability == write_concern::majority)
    mongoc_write_concern_set_wmajority(wc, static_cast<std::int32_t>(r.write_timeout.count()));
  else
    mongoc_write_concern_set_w(wc, 1);
  mongoc_write_concern_append(wc, opts);
  mongoc_write_concern_destroy(wc);
}

bool any_items(const bson_t* doc, const char* key) {
  bson_iter_t it, item;
  return bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &item) &&
         bson_iter_next(&item);
}

enum class verdict { written, not_matched, refused };
struct one_result {
  verdict v = verdict::written;
  std::int64_t matched = 0, upserted = 0;
  std::string refusal;
};

// The failure path only (a write that matched nothing, or an upsert's E11000): the document the
// caller's filter names, as the primary has it now.
outcome<fence_seen> read_fence(mongoc_collection_t* coll, const fence_request& r, const fence_command& cmd,
                               std::string* refusal) {
  bson_doc opts;
  mongoc_read_prefs_t* prefs = nullptr;
  fence_read_opts(r.field, opts.get(), &prefs);
  mongoc_cursor_t* cur = mongoc_collection_find_with_opts(coll, &cmd.user_filter, opts.get(), prefs);
  mongoc_read_prefs_destroy(prefs);
  const bson_t* doc = nullptr;
  outcome<fence_seen> out;
  bson_error_t err;
  if (mongoc_cursor_next(cur, &doc)) {
    out.value = classify_fence(doc, r.field, r.token, refusal);
  } else if (mongoc_cursor_error(cur, &err)) {
    out = failure_from<fence_seen>(classify<bool>(err, false));
    out.message = "the write matched nothing, and the read of its fence failed: " + out.message;
  }
  mongoc_cursor_destroy(cur);
  return out;
}

// Built on its own, not by changing `out` in write_one's loop: GCC 12 at -O2 warned there
// (-Warray-bounds, a string moved out of the loop's outcome), which the Release build's -Werror
// turns into an error.
outcome<one_result> unknown_after_two_misses() {
  return failure<one_result>(make_error_code(errc::ambiguous_result),
                             "the write matched nothing twice, yet the document's fence let this token write it "
                             "both times: it changed in between, and whether this write applied is not known",
                             true);
}

outcome<one_result> write_one(mongoc_collection_t* coll, const fence_request& r, const fence_item& item,
                              const fence_command& cmd) {
  for (bool resent = false;; resent = true) {
    bson_doc opts, reply;
    append_write_concern(opts.get(), r);
    if (item.upsert) BSON_APPEND_BOOL(opts.get(), "upsert", true);
    bson_error_t err;
    bool ok = false;
    switch (item.kind) {
      case fence_kind::update:
        ok = mongoc_collection_update_one(coll, &cmd.filter, &cmd.change, opts.get(), reply.get(), &err);
        break;
      case fence_kind::replace:
        ok = mongoc_collection_replace_one(coll, &cmd.filter, &cmd.change, opts.get(), reply.get(), &err);
        break;
      case fence_kind::remove:
        ok = mongoc_collection_delete_one(coll, &cmd.filter, opts.get(), reply.get(), &err);
        break;
    }
    outcome<one_result> out;
    if (!ok) {
      out = failure_from<one_result>(classify<bool>(err, true, reply.get()));
      // Only an upsert's insert that collided with the pinned _id is judged: the fence did not
      // let this write match the document, or another unique index refused it.
      if (!item.upsert || !is_duplicate_key(err) || any_items(reply.get(), "writeConcernErrors")) return out;
    } else {
      out.value.matched = get_int(reply.get(), item.kind == fence_kind::remove ? "deletedCount" : "matchedCount");
      out.value.upserted = get_int(reply.get(), "upsertedCount");
      if (out.value.matched + out.value.upserted > 0) return out;
    }
    std::string refusal;
    auto seen = read_fence(coll, r, cmd, &refusal);
    if (seen.ec) return failure_from<one_result>(seen);
    switch (judge_miss(seen.value, !ok, resent)) {
      case miss_verdict::not_matched:
        out.value.v = verdict::not_matched;
        return out;
      case miss_verdict::refused:
        return success(one_result{verdict::refused, 0, 0, std::move(refusal)});
      case miss_verdict::resend:
        continue;
      case miss_verdict::ambiguous:
        return unknown_after_two_misses();
      case miss_verdict::server_error:
        return out;
    }
  }
}

}  // namespace

// Exactly as the server's {$lte: token} on a double: NaN never passes, and the comparison is of
// the values, not of the double the token rounds to (tokens exceed 2^53).
namespace {
bool double_at_most(double d, std::int64_t token) {
  if (std::isnan(d)) return false;
  if (d < -9223372036854775808.0) return true;   // below every int64
  if (d >= 9223372036854775808.0) return false;  // 2^63: above every int64
  const double whole = std::floor(d);
  const auto i = static_cast<std::int64_t>(whole);  // exact: whole is an integer in range
  return i < token || (i == token && whole == d);
}
}  // namespace

fence_seen classify_fence(const bson_t* doc, const std::string& field, std::int64_t token, std::string* refusal) {
  if (!doc) return fence_seen::no_document;
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, field.c_str())) return fence_seen::writable;
  const std::string tail = " this write's token " + std::to_string(token);
  if (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it)) {
    if (bson_iter_as_int64(&it) <= token) return fence_seen::writable;
    *refusal = "the document's fence " + std::to_string(bson_iter_as_int64(&it)) + " is above" + tail;
    return fence_seen::refused;
  }
  if (BSON_ITER_HOLDS_DOUBLE(&it) && double_at_most(bson_iter_double(&it), token)) return fence_seen::writable;
  // A decimal128 or an array is not compared here: the server's $lte would have let one at most
  // the token through, so seeing it after a miss it is called refused (docs/design.md section 15).
  *refusal = "the document's fence is not an integer (a double above, NaN, or another type), or above" + tail;
  return fence_seen::refused;
}

miss_verdict judge_miss(fence_seen seen, bool collided, bool resent) {
  switch (seen) {
    case fence_seen::refused:
      return miss_verdict::refused;
    case fence_seen::no_document:
      // Matched nothing and nothing there: as unfenced. An upsert that collided with a document
      // deleted since: sending it again inserts it.
      if (!collided) return miss_verdict::not_matched;
      return resent ? miss_verdict::server_error : miss_verdict::resend;
    case fence_seen::writable:
      // The fenced filter would match it now: it changed between the write and the read (a
      // concurrent upsert inserted it, another write made it match the caller's filter). Once more.
      if (!resent) return miss_verdict::resend;
      return collided ? miss_verdict::server_error : miss_verdict::ambiguous;
  }
  return miss_verdict::ambiguous;
}

void fence_read_opts(const std::string& field, bson_t* opts, mongoc_read_prefs_t** prefs) {
  bson_t projection, rc;
  BSON_APPEND_DOCUMENT_BEGIN(opts, "projection", &projection);
  BSON_APPEND_INT32(&projection, field.c_str(), 1);
  bson_append_document_end(opts, &projection);
  BSON_APPEND_INT64(opts, "limit", 1);
  // Local, not majority, whatever the locks' durability: under w: majority the write's filter saw
  // the primary's latest state, and a majority snapshot may still show an older fence or no
  // document, turning a refusal into "not found" (docs/design.md section 15, "Cost").
  build_read_opts(read_mode::primary, opts, prefs);
  BSON_APPEND_DOCUMENT_BEGIN(opts, "readConcern", &rc);
  BSON_APPEND_UTF8(&rc, "level", "local");
  bson_append_document_end(opts, &rc);
}

error_code check_fence_request(const fence_request& r, std::string* why) {
  if (auto ec = validate_namespace(r.database, r.collection, why)) return ec;
  const std::string_view f = r.field;
  if (f.empty() || f.size() > 128 || f[0] == '$' || f.find('.') != std::string_view::npos ||
      f.find('\0') != std::string_view::npos || f == "_id")
    return fail(errc::invalid_options, why,
                "fence_field must be 1..128 bytes, not _id, without '.', NUL or a leading '$'");
  if (r.token <= 0)
    return fail(errc::invalid_options, why, "the fencing token must be positive (an empty lease has 0)");
  if (r.write_timeout.count() < 0 || r.write_timeout.count() > INT32_MAX)
    return fail(errc::invalid_options, why, "write_timeout must be 0..2^31-1 ms");
  return {};
}

error_code build_fence_command(const fence_item& item, std::string_view field, std::int64_t token,
                               fence_command& out, std::string* why) {
  if (auto ec = parse(item.filter, "filter", &out.user_filter, why)) return ec;
  if (item.upsert && item.kind == fence_kind::remove)
    return fail(errc::invalid_document, why, "a delete cannot upsert");
  if (item.upsert && !pins_id(&out.user_filter))
    return fail(errc::invalid_document, why,
                "an upsert's filter must name its document by _id (an equality at the top level), so that a "
                "refused match cannot insert a second document");
  if (auto ec = build_filter(&out.user_filter, field, token, &out.filter, why)) return ec;
  if (item.kind == fence_kind::remove) return {};
  bson_doc change;
  if (auto ec = parse(item.change, item.kind == fence_kind::update ? "update" : "replacement", change.get(), why))
    return ec;
  return item.kind == fence_kind::update ? build_update(change.get(), field, token, &out.change, why)
                                         : build_replacement(change.get(), field, token, &out.change, why);
}

outcome<fence_report> fenced_write(mongoc_client_t* client, const fence_request& r, const std::atomic<bool>* stop) {
  outcome<fence_report> out;
  std::string why;
  auto reject = [&](error_code ec) {
    out.ec = ec;
    out.message = why;
    return out;
  };
  if (auto ec = check_fence_request(r, &why)) return reject(ec);
  // Every item is checked before the first is sent: bad input writes nothing.
  std::vector<std::unique_ptr<fence_command>> cmds;
  for (std::size_t i = 0; i < r.items.size(); ++i) {
    cmds.push_back(std::make_unique<fence_command>());
    if (auto ec = build_fence_command(r.items[i], r.field, r.token, *cmds.back(), &why)) {
      if (r.items.size() > 1) why = "write " + std::to_string(i) + ": " + why;
      return reject(ec);
    }
  }
  const auto abandoned = [&](std::size_t i) {
    if (!stop || !stop->load()) return false;
    out.ec = make_error_code(boost::asio::error::operation_aborted);
    out.message = "abandoned by its caller: write " + std::to_string(i) + " and those after it were not sent";
    return true;
  };
  if (abandoned(0)) return out;  // abandoned while queued for a worker
  collection_ref coll(client, r.database, r.collection);
  for (std::size_t i = 0; i < r.items.size(); ++i) {
    if (abandoned(i)) return out;
    auto one = write_one(coll.get(), r, r.items[i], *cmds[i]);
    if (one.ec) {
      out.ec = one.ec;
      out.ambiguous = one.ambiguous;
      out.message = r.items.size() > 1 ? "write " + std::to_string(i) + ": " + one.message : one.message;
      return out;
    }
    out.value.matched += one.value.matched;
    out.value.upserted += one.value.upserted;
    if (one.value.v == verdict::refused) {
      out.value.refused.push_back(i);
      if (out.value.refusal.empty())
        out.value.refusal =
            r.items.size() > 1 ? "write " + std::to_string(i) + ": " + one.value.refusal : one.value.refusal;
    }
  }
  if (!out.value.refused.empty()) {
    out.ec = make_error_code(errc::fenced_out);
    out.message = out.value.refusal;
    if (r.items.size() > 1)
      out.message += " (" + std::to_string(out.value.refused.size()) + " of " + std::to_string(r.items.size()) +
                     " writes refused; the others stand)";
  }
  return out;
}

}  // namespace mongolock::detail
