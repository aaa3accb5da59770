#include "mongolock/options.hpp"

#include "model/document_name.hpp"
#include "model/utf8.hpp"
#include "mongolock/error.hpp"

namespace mongolock {
namespace {

boost::system::error_code fail(errc code, std::string* why, std::string text) {
  if (why) *why = std::move(text);
  return make_error_code(code);
}

using detail::valid_utf8;

}  // namespace

boost::system::error_code validate(const client_options& o, std::string* why) {
  if (o.worker_threads == 0 || o.worker_threads > 256)
    return fail(errc::invalid_options, why, "worker_threads must be in 1..256");
  if (o.server_selection_timeout.count() <= 0 || o.server_selection_timeout > limits::max_timeout)
    return fail(errc::invalid_options, why, "server_selection_timeout must be in 1 ms..24 h");
  if (o.socket_timeout.count() <= 0 || o.socket_timeout > limits::max_timeout)
    return fail(errc::invalid_options, why, "socket_timeout must be in 1 ms..24 h");
  if (o.label.size() > 128) return fail(errc::invalid_options, why, "label must be at most 128 bytes");
  return {};
}

boost::system::error_code validate(const lock_options& o, std::string* why) {
  if (o.expiry < limits::min_expiry || o.expiry > limits::max_expiry)
    return fail(errc::invalid_options, why, "expiry must be in 100 ms..24 h");
  if (o.renew_every.count() < 0 || o.effective_renew_every() >= o.expiry)
    return fail(errc::invalid_options, why, "renew_every must be positive and below expiry");
  if (o.safety_margin.count() < 0 || o.effective_margin() > o.expiry || o.effective_margin() * 2 >= o.expiry)
    return fail(errc::invalid_options, why, "safety_margin must be below half of expiry");
  if (o.effective_renew_every() + o.effective_margin() >= o.expiry)
    return fail(errc::invalid_options, why,
                "renew_every + safety_margin must be below expiry (no time left to renew)");
  if (o.backoff_min.count() <= 0 || o.backoff_max < o.backoff_min || o.backoff_max > limits::max_backoff)
    return fail(errc::invalid_options, why,
                "backoff range must satisfy 0 < backoff_min <= backoff_max <= 1 h");
  if (o.acquire_timeout.count() < 0 || o.acquire_timeout > limits::max_acquire_timeout)
    return fail(errc::invalid_options, why, "acquire_timeout must be in 0 (none)..366 days");
  if (o.write_timeout.count() <= 0 || o.write_timeout > limits::max_timeout)
    return fail(errc::invalid_options, why, "write_timeout must be in 1 ms..24 h");
  if (o.idle_cleanup < std::chrono::seconds{3600} || o.idle_cleanup > limits::max_idle_cleanup)
    return fail(errc::invalid_options, why, "idle_cleanup must be in 1 h..3660 days");
  return {};
}

namespace detail {
boost::system::error_code validate_document_name(std::string_view name, std::string* why) {
  if (name.empty()) return fail(errc::invalid_name, why, "lock name is empty");
  if (name.size() > limits::max_name_bytes)
    return fail(errc::invalid_name, why, "lock name is longer than " + std::to_string(limits::max_name_bytes) + " bytes");
  if (name.find('\0') != std::string_view::npos)
    return fail(errc::invalid_name, why, "lock name contains a NUL byte");
  if (!valid_utf8(name)) return fail(errc::invalid_name, why, "lock name is not valid UTF-8");
  return {};
}
}  // namespace detail

boost::system::error_code validate_lock_name(std::string_view name, std::string* why) {
  if (auto ec = detail::validate_document_name(name, why)) return ec;
  // A name of one kind only (docs/design.md section 10): NAME#k and NAME#w are a semaphore's or
  // an rw_lock's own documents, which its declaration on NAME covers and nothing else may use.
  if (name.find('#') != std::string_view::npos)
    return fail(errc::invalid_name, why, "lock name contains '#', which names the permits of a semaphore or rw_lock");
  return {};
}

boost::system::error_code validate_namespace(std::string_view db, std::string_view coll,
                                             std::string* why) {
  if (db.empty() || db.size() > 63)
    return fail(errc::invalid_collection, why, "database name must be 1..63 bytes");
  if (!valid_utf8(db)) return fail(errc::invalid_collection, why, "database name is not valid UTF-8");
  for (char c : db)
    if (c == '/' || c == '\\' || c == '.' || c == ' ' || c == '"' || c == '$' || c == '\0')
      return fail(errc::invalid_collection, why, "database name contains one of /\\. \"$ or NUL");
  if (coll.empty()) return fail(errc::invalid_collection, why, "collection name is empty");
  if (coll.size() + db.size() + 1 > 255)
    return fail(errc::invalid_collection, why, "namespace longer than 255 bytes");
  if (coll.find('$') != std::string_view::npos || coll.find('\0') != std::string_view::npos)
    return fail(errc::invalid_collection, why, "collection name contains '$' or NUL");
  if (coll.starts_with("system.") || coll.front() == '.' || coll.back() == '.')
    return fail(errc::invalid_collection, why, "collection name is reserved or starts/ends with '.'");
  if (!valid_utf8(coll)) return fail(errc::invalid_collection, why, "collection name is not valid UTF-8");
  return {};
}

}  // namespace mongolock
