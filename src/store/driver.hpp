#pragma once
// The blocking side: libmongoc's thread-safe client pool. Only worker threads call into it.
#include <mongoc/mongoc.h>

#include <boost/system/error_code.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mongolock/options.hpp"

namespace mongolock::detail {

// "mongodb://user:secret@host/" -> "mongodb://user:****@host/". Used for every message that may
// quote a connection string, so credentials never reach a log or an error message. Robust to
// malformed text: the userinfo runs to the LAST '@' (a password may hold '/', ':', '@', '?'),
// after any "scheme:/" or "scheme://", or from the start; it may over-redact, never under.
std::string redact_uri(std::string_view uri);

// `message` (libmongoc's, say) with the password of `uri` replaced by "****". If a piece of it
// is left (the driver quotes a fragment, e.g. a host string cut at a '/' inside the password),
// the whole message is replaced by `withheld_explanation`, which quotes nothing of the input (a
// password may still be one of its words, e.g. "string").
inline constexpr const char* withheld_explanation =
    "malformed connection string (the driver's explanation is withheld: it may quote the password)";
std::string hide_password(std::string_view message, std::string_view uri);

class driver {
 public:
  // Parses `uri`, applies the timeouts of `opts` unless the URI sets them, and creates the pool
  // (maxPoolSize = worker_threads, so a worker never blocks waiting for a connection).
  static std::unique_ptr<driver> create(std::string_view uri, const client_options& opts,
                                        boost::system::error_code& ec, std::string& why);
  ~driver();
  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;

  // Runs fn(mongoc_client_t*) with a pooled client. Blocks; call it from a worker thread only.
  template <class Fn>
  auto with_client(Fn&& fn) {
    struct lease_guard {
      mongoc_client_pool_t* pool;
      mongoc_client_t* client;
      ~lease_guard() { mongoc_client_pool_push(pool, client); }
    } guard{pool_, mongoc_client_pool_pop(pool_)};
    return fn(guard.client);
  }

  const std::string& redacted_uri() const { return redacted_uri_; }

  // Whether a server may still answer or apply what this driver sends: one it can write to is
  // known (by the driver's topology events), or a command it wrote is not yet answered or failed
  // (by its command events: each started command ends in exactly one succeeded or failed event).
  // False once neither holds: every server unknown or unreachable, and every call still looking
  // for one (a call selecting a server or connecting has sent nothing). True whatever happens if
  // the events could not be registered.
  bool server_in_reach() const noexcept {
    return !watched_ || writable_.load(std::memory_order_relaxed) ||
           awaiting_reply_.load(std::memory_order_relaxed) != 0;
  }

 private:
  driver(mongoc_uri_t* uri, mongoc_client_pool_t* pool, std::string redacted)
      : uri_(uri), pool_(pool), redacted_uri_(std::move(redacted)) {}
  void watch_the_server();
  mongoc_uri_t* uri_;
  mongoc_client_pool_t* pool_;
  std::string redacted_uri_;
  bool watched_ = false;
  std::atomic<bool> writable_{false};
  std::atomic<std::int64_t> awaiting_reply_{0};
};

}  // namespace mongolock::detail
