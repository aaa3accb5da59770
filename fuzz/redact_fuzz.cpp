// URI redaction: whatever the text, a password libmongoc would use never
// reaches the redacted URI, a message quoting the URI, or the error the client constructor
// reports. Checked where the password is unambiguous in the text: no percent escapes (the parsed
// password is then the written one) and it occurs exactly once in the quoting message (so no
// host, option or fixed wording shares it, which a check could not tell apart from a leak).
#include <mongoc/mongoc.h>

#include <cctype>
#include <cstring>
#include <memory>

#include "store/driver.hpp"
#include "mongolock/error.hpp"
#include "fuzz_check.hpp"

namespace {

std::size_t occurrences(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  mongoc_init();
  mongoc_log_set_handler(nullptr, nullptr);  // libmongoc's warnings about odd URIs: noise here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string uri = fuzz::text(data, size);
  const std::string redacted = mongolock::detail::redact_uri(uri);
  const std::string quoted = "cannot reach " + uri + " (timeout)";
  const std::string hidden = mongolock::detail::hide_password(quoted, uri);
  boost::system::error_code ec;
  std::string why;
  std::unique_ptr<mongolock::detail::driver> d;
  // mongodb+srv:// makes libmongoc resolve DNS records while parsing: no network here.
  std::string lower = uri;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("+srv") == std::string::npos) {
    d = mongolock::detail::driver::create(uri, mongolock::client_options{}, ec, why);
    fuzz::check(d != nullptr || ec, "the constructor failed without an error code");
  }

  if (uri.find('\0') != std::string::npos) {
    const bool tried = lower.find("+srv") == std::string::npos;
    fuzz::check(!tried || (d == nullptr && ec == mongolock::errc::invalid_uri), "a URI with a NUL byte was accepted");
    return 0;  // libmongoc would read another string than the one redacted: refused, done
  }
  bson_error_t err;
  mongoc_uri_t* parsed = mongoc_uri_new_with_error(uri.c_str(), &err);
  if (!parsed) return 0;
  const char* pw = mongoc_uri_get_password(parsed);
  const std::string password = pw ? pw : "";
  mongoc_uri_destroy(parsed);
  // The redactor's own mask "****" may legitimately be the password too.
  if (password.size() < 3 || password.find_first_not_of('*') == std::string::npos) return 0;
  if (uri.find('%') != std::string::npos || occurrences(quoted, password) != 1) return 0;
  fuzz::check(redacted.find(password) == std::string::npos, "redact_uri left the password");
  // The withheld explanation is fixed text: a password that is one of its words ("string") is
  // not in it because of the input.
  fuzz::check(hidden == mongolock::detail::withheld_explanation || hidden.find(password) == std::string::npos,
              "hide_password left the password");
  // libmongoc's own wording ("mongodb://", "replicaSet"...) may contain a short password.
  if (password.size() >= 8)
    fuzz::check(why.find(password) == std::string::npos, "the constructor's error quotes the password");
  if (d) fuzz::check(d->redacted_uri().find(password) == std::string::npos, "the driver's URI shows the password");
  return 0;
}
