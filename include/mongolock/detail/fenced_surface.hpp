#pragma once
// The fenced writes of a held lease, written once (fence.hpp has the operation and its contract):
// lease and multi_lease derive from this and supply one hook,
//
//   detail::fence_context fence_context() const;  // executor, client, token (null client: empty)
//
// so that the classes carry no copy of the overload set, and a reshaping of the lease classes
// moves one base and one hook (as acquire_surface.hpp does for the acquires).
#include <boost/asio/deferred.hpp>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "mongolock/detail/initiation.hpp"
#include "mongolock/fence.hpp"

namespace mongolock::detail {

struct fence_context {
  boost::asio::any_io_executor ex;
  std::shared_ptr<client_impl> client;
  std::int64_t token = 0;
  fence_refusal refused;  // set: nothing is sent (an empty, released or lost lease)
};

template <class Holder>
class fenced_surface {
 public:
  // async_fenced_update (fence.hpp) with this lease's fencing token and client: one update of one
  // document, applied only if the document's fence is at most the token. The fence is what
  // protects the document: a holder paused past its lease, which has not noticed yet, is refused
  // (errc::fenced_out) once a newer holder has written the document. A lease known to have ended
  // sends nothing (cheap, and it catches a use after release): errc::lease_lost once lost,
  // errc::released once released, errc::not_held when empty or when the provider has no MongoDB
  // client. Errors, cancellation and executor: fence.hpp.
  // Which documents a lease may fence (docs/design.md section 15): only those fenced by the same
  // lock name in the same lock collection, always. Never with a semaphore permit's or a rw_lock
  // reader's lease (holders at once, unrelated tokens). A multi_lease fences with its highest
  // token, so a set over {A, B} and a plain lock on A must never fence the same document: the
  // set's highest token (B's) can exceed A's later tokens, refusing the newer plain holder, and a
  // stale set holder would pass a fence the plain lock set.
  template <class Token = boost::asio::deferred_t>
    requires is_token_v<Token>
  auto async_fenced_update(fenced_collection where, document filter, document update, Token&& token = {}) const {
    return write(std::move(where), one(std::move(filter), std::move(update)), nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_fenced_update(fenced_collection where, document filter, document update, diagnostics& d,
                           Token&& token = {}) const {
    return write(std::move(where), one(std::move(filter), std::move(update)), &d, std::forward<Token>(token));
  }
  // async_fenced_write (fence.hpp): updates, replacements, upserts and deletes of several
  // documents, each fenced on its own; result.refused names the refused ones.
  template <class Token = boost::asio::deferred_t>
    requires is_token_v<Token>
  auto async_fenced_write(fenced_collection where, std::vector<fenced_op> ops, Token&& token = {}) const {
    return write(std::move(where), std::move(ops), nullptr, std::forward<Token>(token));
  }
  template <class Token = boost::asio::deferred_t>
  auto async_fenced_write(fenced_collection where, std::vector<fenced_op> ops, diagnostics& d,
                          Token&& token = {}) const {
    return write(std::move(where), std::move(ops), &d, std::forward<Token>(token));
  }

 private:
  static std::vector<fenced_op> one(document filter, document update) {
    std::vector<fenced_op> ops;
    ops.push_back({fenced_kind::update, std::move(filter), std::move(update)});
    return ops;
  }
  template <class Token>
  auto write(fenced_collection where, std::vector<fenced_op> ops, diagnostics* d, Token&& token) const {
    auto ctx = static_cast<const Holder&>(*this).fence_context();
    return initiate_fenced(std::move(ctx.ex), std::move(ctx.client), {ctx.token, std::move(where), std::move(ops)},
                           ctx.refused, d, std::forward<Token>(token));
  }
};

}  // namespace mongolock::detail
