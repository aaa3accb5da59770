#pragma once
// Fenced writes: the check the protected resource must make (docs/design.md section 15), for
// documents the user keeps in MongoDB, in any database of the client that holds the locks. A
// fenced write changes a document only if the document's fence field is at most the writer's
// fencing token (or absent), and raises the fence to the token in the same atomic
// single-document update. A holder paused past its lease writes with an older token than the
// holder that followed it, so once the newer holder has written a document, the stale write is
// refused with errc::fenced_out and changes nothing.
//
// The leases forward to these (lease::async_fenced_update, multi_lease::async_fenced_update);
// the CLI's `mongolock fence` runs them with $MONGOLOCK_FENCING_TOKEN.
#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mongolock/client.hpp"
#include "mongolock/detail/initiation.hpp"
#include "mongolock/error.hpp"
#include "mongolock/options.hpp"

namespace mongolock {

// A filter, an update or a replacement. Text or bytes, never a driver type: this header must not
// expose libmongoc, and a user may hold documents in any BSON library (libbson, mongocxx,
// bsoncxx's view.data()) or none. Extended JSON (relaxed or canonical, libbson's reader) is what
// a shell, a config file and the CLI have; tokens and other int64 values must be written as
// {"$numberLong": "..."} or as plain integers (never through a double: tokens exceed 2^53).
// Raw BSON bytes are for callers who already have a document: no second encoding, exact types.
// A value type (it owns its bytes), so an operation can outlive the caller's buffers.
class document {
 public:
  document() : data_("{}") {}
  document(const char* json) : data_(json) {}  // NOLINT: implicit, so "..." reads as a document
  document(std::string_view json) : data_(json) {}
  document(std::string json) : data_(std::move(json)) {}
  static document from_bson(const std::uint8_t* data, std::size_t size) {
    document d;
    d.data_.assign(reinterpret_cast<const char*>(data), size);
    d.bson_ = true;
    return d;
  }
  bool is_bson() const noexcept { return bson_; }
  // The JSON text, or the BSON bytes.
  const std::string& data() const noexcept { return data_; }

 private:
  std::string data_;
  bool bson_ = false;
};

// Where the documents live and how they are fenced. With GCC 12, build it as a named variable,
// not as a braced temporary inside a co_await expression: GCC 12 mishandles such temporaries
// (the fence suite's first version freed fence_field's bytes twice, under valgrind), as the
// project's other coroutines note.
struct fenced_collection {
  std::string database;
  std::string collection;
  // The field that holds each document's fence (an int64 token). Documents without it are
  // writable (the first fenced write adds it). 1..128 bytes, not _id, without '.', NUL or a
  // leading '$': errc::invalid_options otherwise. A fence that is an array (only a writer that
  // bypasses the fence makes one) lets a token through if any element is at most it, as $lte.
  std::string fence_field = "fence";
  // As the locks (lock_options): majority by default, so a fence raised is not rolled back by a
  // failover while the write's caller believes it applied.
  write_concern durability = write_concern::majority;
  // The majority write's wtimeout. 0 is MongoDB's "no limit": the write then waits for a
  // majority as long as the socket timeout lets it.
  std::chrono::milliseconds write_timeout{10000};
};

enum class fenced_kind {
  update,   // `change` holds update operators ({"$set": {...}}); none may touch the fence field
  replace,  // `change` is the whole new document (without the fence field, which the write adds)
  remove,   // deletes the document; the fence goes with it (docs/design.md section 15: tombstones)
};

// One document's write: `filter` should name one document (the write changes the first that
// matches, as update_one). An upsert's filter must hold an _id equality at its top level
// (errc::invalid_document otherwise): if the fence refuses the existing document, the insert
// then collides with its _id and is reported as fenced_out, never a second document.
struct fenced_op {
  fenced_kind kind = fenced_kind::update;
  document filter;
  document change;  // unused by remove
  bool upsert = false;
};

struct fenced_result {
  std::int64_t matched = 0;   // documents updated, replaced or deleted
  std::int64_t upserted = 0;  // documents inserted by an upsert
  // Indexes into the ops the fence refused, in order. A refused op changed nothing; the others
  // stand (each document is fenced on its own, not as a transaction).
  std::vector<std::size_t> refused;
};

namespace detail {
struct client_impl;
struct fence_call {
  std::int64_t token = 0;
  fenced_collection where;
  std::vector<fenced_op> ops;
};
using fence_handler = boost::asio::any_completion_handler<void(boost::system::error_code, fenced_result)>;
std::shared_ptr<client_impl> client_of(const client&) noexcept;
void start_fenced_write(std::shared_ptr<client_impl> c, fence_call, diagnostics*, fence_handler);

// Why a write sends nothing (an empty or ended lease, a provider without a MongoDB client): the
// write completes with `ec` and the reason `why`. Empty `ec`: send.
struct fence_refusal {
  boost::system::error_code ec;
  const char* why = "";
};

// Through async_op (detail/initiation.hpp), as every operation: use_awaitable and use_future
// throw with the reason.
template <class Token>
auto initiate_fenced(boost::asio::any_io_executor ex, std::shared_ptr<client_impl> c, fence_call call,
                     fence_refusal no, diagnostics* d, Token&& token) {
  return async_op<void(boost::system::error_code, fenced_result)>(
      initiation(std::move(ex),
                 [](auto h, std::shared_ptr<client_impl> c, fence_call call, fence_refusal no, diagnostics* d) {
                   if (!no.ec && !c)
                     no = {make_error_code(errc::not_held),
                           "the provider has no MongoDB client (an in-memory store): nothing to write to"};
                   if (no.ec) {  // completed through the handler's executor, never inline
                     if (d) d->reason = no.why;
                     return boost::asio::post(boost::asio::append(std::move(h), no.ec, fenced_result{}));
                   }
                   start_fenced_write(std::move(c), std::move(call), d, std::move(h));
                 }),
      token, std::move(c), std::move(call), no, d);
}
}  // namespace detail

// Writes `ops` in order, each fenced on its own with `fencing_token`, each one single-document
// command; a read follows only a write that matched nothing (to tell a refusal from a missing
// document), so a write that applies costs the round trips of the same write unfenced.
// Completion: void(error_code, fenced_result).
// - {}: every op applied (or matched nothing, as an unfenced write would: matched says).
// - errc::fenced_out: at least one op was refused (result.refused; the reason names the
//   document's fence and the token of the first); the others stand.
// - errc::invalid_document (a filter or update not exactly one JSON object or BSON document, a
//   repeated top-level key, an update that touches the fence field, an upsert without a pinned
//   _id), errc::invalid_collection,
//   errc::invalid_options (fence_field, a token <= 0): checked before anything is sent; nothing
//   is written. Every positive token is accepted (limits::max_fencing_token is the largest int64).
// - a server error (server_error, not_authorized, server_unavailable, ambiguous_result): the
//   ops before the failing one stand (result counts them), the failing one may have applied
//   only if ambiguous_result or server_unavailable, the ones after were not sent.
// Cancellation: terminal (partial and total are ignored, as for client::async_server_version):
// completes at once with operation_aborted; the worker sends no op after that (it checks before
// each), but the op in flight is not recalled and may apply (with its fence check). Writes with
// an equal token are not ordered against that op (docs/design.md section 15, "Cancellation").
// Retrying after ambiguous_result, server_unavailable or a cancellation with the same token is
// safe for the ordering (the fence is at most the token, so no older token gets through), but
// the write may then apply twice: retried writes must be idempotent ($set of values, not $inc).
// The handler runs on its associated executor (the client's by default). Thread-safe.
template <class Token = boost::asio::deferred_t>
  requires detail::is_token_v<Token>
auto async_fenced_write(client& c, std::int64_t fencing_token, fenced_collection where, std::vector<fenced_op> ops,
                        Token&& token = {}) {
  return detail::initiate_fenced(c.get_executor(), detail::client_of(c),
                                 {fencing_token, std::move(where), std::move(ops)}, {}, nullptr,
                                 std::forward<Token>(token));
}
// The same, with the reason for a failure (or a refusal) in `d`.
template <class Token = boost::asio::deferred_t>
auto async_fenced_write(client& c, std::int64_t fencing_token, fenced_collection where, std::vector<fenced_op> ops,
                        diagnostics& d, Token&& token = {}) {
  return detail::initiate_fenced(c.get_executor(), detail::client_of(c),
                                 {fencing_token, std::move(where), std::move(ops)}, {}, &d,
                                 std::forward<Token>(token));
}

// One update of one document (async_fenced_write with a single fenced_kind::update op).
template <class Token = boost::asio::deferred_t>
  requires detail::is_token_v<Token>
auto async_fenced_update(client& c, std::int64_t fencing_token, fenced_collection where, document filter,
                         document update, Token&& token = {}) {
  return async_fenced_write(c, fencing_token, std::move(where),
                            {fenced_op{fenced_kind::update, std::move(filter), std::move(update)}},
                            std::forward<Token>(token));
}
template <class Token = boost::asio::deferred_t>
auto async_fenced_update(client& c, std::int64_t fencing_token, fenced_collection where, document filter,
                         document update, diagnostics& d, Token&& token = {}) {
  return async_fenced_write(c, fencing_token, std::move(where),
                            {fenced_op{fenced_kind::update, std::move(filter), std::move(update)}}, d,
                            std::forward<Token>(token));
}

}  // namespace mongolock
