#include "detail/driver.hpp"

#include <mutex>

#include "mongolock/error.hpp"

namespace mongolock::detail {
namespace {

void init_driver_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Before mongoc_init, or the driver prints its own log lines to stderr.
    mongoc_log_set_handler(nullptr, nullptr);
    mongoc_init();
  });
}

void default_option(mongoc_uri_t* uri, const char* name, std::int64_t value_ms) {
  const bson_t* opts = mongoc_uri_get_options(uri);
  bson_iter_t it;
  if (opts && bson_iter_init_find_case(&it, opts, name)) return;  // the URI wins
  mongoc_uri_set_option_as_int32(uri, name, static_cast<std::int32_t>(value_ms));
}

}  // namespace

std::string redact_uri(std::string_view uri) {
  const auto scheme = uri.find("://");
  if (scheme == std::string_view::npos) return std::string(uri);
  const auto host_start = scheme + 3;
  const auto at = uri.find('@', host_start);
  const auto slash = uri.find('/', host_start);
  if (at == std::string_view::npos || (slash != std::string_view::npos && at > slash))
    return std::string(uri);
  const auto colon = uri.find(':', host_start);
  std::string out(uri.substr(0, host_start));
  if (colon != std::string_view::npos && colon < at)
    out.append(uri.substr(host_start, colon - host_start)).append(":****");
  else
    out.append(uri.substr(host_start, at - host_start));
  out.append(uri.substr(at));
  return out;
}

std::unique_ptr<driver> driver::create(std::string_view uri_text, const client_options& opts,
                                       boost::system::error_code& ec, std::string& why) {
  init_driver_once();
  const std::string text(uri_text);
  bson_error_t err;
  mongoc_uri_t* uri = mongoc_uri_new_with_error(text.c_str(), &err);
  if (!uri) {
    ec = make_error_code(errc::invalid_uri);
    // libmongoc's message never quotes the URI back, but redact anyway: never leak credentials.
    why = std::string(err.message) + " (" + redact_uri(text) + ")";
    return nullptr;
  }
  default_option(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, opts.server_selection_timeout.count());
  default_option(uri, MONGOC_URI_SOCKETTIMEOUTMS, opts.socket_timeout.count());
  default_option(uri, MONGOC_URI_CONNECTTIMEOUTMS,
                 std::min<std::int64_t>(opts.server_selection_timeout.count(), 5000));
  mongoc_uri_set_appname(uri, "mongolock");
  mongoc_client_pool_t* pool = mongoc_client_pool_new_with_error(uri, &err);
  if (!pool) {
    mongoc_uri_destroy(uri);
    ec = make_error_code(errc::invalid_uri);
    why = err.message;
    return nullptr;
  }
  mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
  mongoc_client_pool_max_size(pool, static_cast<std::uint32_t>(opts.worker_threads));
  return std::unique_ptr<driver>(new driver(uri, pool, redact_uri(text)));
}

driver::~driver() {
  mongoc_client_pool_destroy(pool_);
  mongoc_uri_destroy(uri_);
}

}  // namespace mongolock::detail
