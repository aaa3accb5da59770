#include "store/driver.hpp"

#include <algorithm>
#include <cctype>
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

namespace {

struct userinfo_parts {
  std::size_t password_begin = 0, password_end = 0;  // empty: no password
};

userinfo_parts find_password(std::string_view uri) {
  // A scheme only counts when followed by '/': in "user:pw@host", "user:" is not one.
  std::size_t start = 0;
  const auto colon = uri.find(':');
  const auto scheme_chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-";
  if (colon != std::string_view::npos && colon > 0 && uri.find_first_not_of(scheme_chars) == colon &&
      colon + 1 < uri.size() && uri[colon + 1] == '/')
    start = uri.find_first_not_of('/', colon + 1);
  const auto at = uri.rfind('@');
  if (at == std::string_view::npos || start == std::string_view::npos || at < start) return {};
  const auto user_end = uri.find(':', start);
  if (user_end == std::string_view::npos || user_end > at) return {};  // a user name only
  return {user_end + 1, at};
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

void replace_all(std::string& text, const std::string& what, std::string_view with) {
  if (what.empty()) return;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + with.size()))
    text.replace(p, what.size(), with);
}

// Does `text` contain any 3-character piece of `secret` (or all of a shorter one)?
bool shares_a_piece(std::string_view text, std::string_view secret) {
  const std::size_t n = std::min<std::size_t>(3, secret.size());
  for (std::size_t i = 0; n > 0 && i + n <= secret.size(); ++i)
    if (text.find(secret.substr(i, n)) != std::string_view::npos) return true;
  return false;
}

}  // namespace

std::string redact_uri(std::string_view uri) {
  const auto pw = find_password(uri);
  if (pw.password_begin == pw.password_end) return std::string(uri);
  return std::string(uri.substr(0, pw.password_begin)) + "****" + std::string(uri.substr(pw.password_end));
}

std::string hide_password(std::string_view message, std::string_view uri) {
  const auto pw = find_password(uri);
  if (pw.password_begin == pw.password_end) return std::string(message);
  const std::string raw(uri.substr(pw.password_begin, pw.password_end - pw.password_begin));
  const std::string decoded = percent_decoded(raw);  // the driver may quote it decoded
  std::string out(message);
  replace_all(out, raw, "****");
  replace_all(out, decoded, "****");
  if (shares_a_piece(out, raw) || shares_a_piece(out, decoded))
    return withheld_explanation;
  return out;
}

std::unique_ptr<driver> driver::create(std::string_view uri_text, const client_options& opts,
                                       boost::system::error_code& ec, std::string& why) {
  init_driver_once();
  const std::string text(uri_text);
  if (text.find('\0') != std::string::npos) {
    // libmongoc would parse only the text before the NUL: a different server, or a password cut
    // short that the redaction of the whole text could not find (found by fuzz/redact_fuzz.cpp).
    ec = make_error_code(errc::invalid_uri);
    why = "connection string contains a NUL byte (" + redact_uri(text.substr(0, text.find('\0'))) + ")";
    return nullptr;
  }
  bson_error_t err;
  mongoc_uri_t* uri = mongoc_uri_new_with_error(text.c_str(), &err);
  if (!uri) {
    ec = make_error_code(errc::invalid_uri);
    // libmongoc's message may quote the password ("Password \"...\" must not have unescaped
    // chars") or a piece of the URI, so it is scrubbed too.
    why = hide_password(err.message, text) + " (" + redact_uri(text) + ")";
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
    why = hide_password(err.message, text);
    return nullptr;
  }
  mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
  mongoc_client_pool_max_size(pool, static_cast<std::uint32_t>(opts.worker_threads));
  std::unique_ptr<driver> d(new driver(uri, pool, redact_uri(text)));
  d->watch_the_server();
  return d;
}

// Before any client is popped from the pool: a client popped earlier would have no callbacks.
// The command events come on the worker threads, inside the blocking call; the topology events
// on the pool's monitoring threads.
void driver::watch_the_server() {
  static constexpr auto self = [](void* context) -> driver& { return *static_cast<driver*>(context); };
  mongoc_apm_callbacks_t* callbacks = mongoc_apm_callbacks_new();
  mongoc_apm_set_command_started_cb(callbacks, [](const mongoc_apm_command_started_t* e) {
    self(mongoc_apm_command_started_get_context(e)).awaiting_reply_.fetch_add(1, std::memory_order_relaxed);
  });
  mongoc_apm_set_command_succeeded_cb(callbacks, [](const mongoc_apm_command_succeeded_t* e) {
    self(mongoc_apm_command_succeeded_get_context(e)).awaiting_reply_.fetch_sub(1, std::memory_order_relaxed);
  });
  mongoc_apm_set_command_failed_cb(callbacks, [](const mongoc_apm_command_failed_t* e) {
    self(mongoc_apm_command_failed_get_context(e)).awaiting_reply_.fetch_sub(1, std::memory_order_relaxed);
  });
  mongoc_apm_set_topology_changed_cb(callbacks, [](const mongoc_apm_topology_changed_t* e) {
    const auto* now = mongoc_apm_topology_changed_get_new_description(e);
    const bool writable = mongoc_topology_description_has_writable_server(now);
    self(mongoc_apm_topology_changed_get_context(e)).writable_.store(writable, std::memory_order_relaxed);
  });
  watched_ = mongoc_client_pool_set_apm_callbacks(pool_, callbacks, this);
  mongoc_apm_callbacks_destroy(callbacks);
}

driver::~driver() {
  mongoc_client_pool_destroy(pool_);
  mongoc_uri_destroy(uri_);
}

}  // namespace mongolock::detail
