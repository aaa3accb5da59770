// Option, name and namespace validation; error category; URI redaction; server version check.
#include <boost/test/unit_test.hpp>

#include <set>

#include "store/driver.hpp"
#include "engine/provider_impl.hpp"
#include "store/mongo_commands.hpp"
#include "mongolock/error.hpp"
#include "mongolock/options.hpp"

using namespace std::chrono_literals;
namespace ml = mongolock;

BOOST_AUTO_TEST_SUITE(validation)

BOOST_AUTO_TEST_CASE(default_options_are_valid) {
  BOOST_TEST(!ml::validate(ml::lock_options{}));
  BOOST_TEST(!ml::validate(ml::client_options{}));
  BOOST_TEST(ml::lock_options{}.effective_renew_every().count() == 10000);
  BOOST_TEST(ml::lock_options{}.effective_margin().count() == 3000);
  // docs/cli.md: `mongolock --wait 0` against an unreachable server takes this long unless the URI
  // sets serverSelectionTimeoutMS (the CLI keeps the client's default).
  BOOST_TEST(ml::client_options{}.server_selection_timeout.count() == 5000);
}

BOOST_AUTO_TEST_CASE(bad_lock_options_name_the_field) {
  std::string why;
  ml::lock_options o;
  o.renew_every = 30s;  // not below expiry
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  BOOST_TEST(why.find("renew_every") != std::string::npos);
  o = {};
  o.backoff_min = 900ms;  // above backoff_max
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  BOOST_TEST(why.find("backoff") != std::string::npos);
  o = {};
  o.expiry = 50ms;
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  o = {};
  o.safety_margin = 20s;
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  o = {};
  o.acquire_timeout = -1ms;
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  ml::client_options c;
  c.worker_threads = 0;
  BOOST_TEST((ml::validate(c, &why) == ml::errc::invalid_options));
}

// A huge expiry overflowed chrono arithmetic and timeouts were cast to int32.
BOOST_AUTO_TEST_CASE(upper_bounds_name_the_limit) {
  std::string why;
  ml::lock_options o;
  o.expiry = ml::limits::max_expiry + 1ms;
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  BOOST_TEST(why.find("expiry") != std::string::npos);
  BOOST_TEST(why.find("24 h") != std::string::npos);
  o.expiry = ml::limits::max_expiry;
  BOOST_TEST(!ml::validate(o));
  o = {};
  o.expiry = std::chrono::milliseconds::max();
  BOOST_TEST((ml::validate(o) == ml::errc::invalid_options));
  o = {};
  o.safety_margin = std::chrono::milliseconds::max();  // "* 2" must not overflow first
  BOOST_TEST((ml::validate(o) == ml::errc::invalid_options));
  o = {};
  o.write_timeout = std::chrono::milliseconds{std::int64_t{1} << 31};
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  BOOST_TEST(why.find("write_timeout") != std::string::npos);
  o = {};
  o.acquire_timeout = ml::limits::max_acquire_timeout + 1ms;
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  BOOST_TEST(why.find("acquire_timeout") != std::string::npos);
  o = {};
  o.backoff_max = ml::limits::max_backoff + 1ms;
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  o = {};
  o.idle_cleanup = ml::limits::max_idle_cleanup + std::chrono::seconds{1};
  BOOST_TEST((ml::validate(o, &why) == ml::errc::invalid_options));
  BOOST_TEST(why.find("idle_cleanup") != std::string::npos);
  ml::client_options c;
  c.socket_timeout = std::chrono::milliseconds{std::int64_t{1} << 32};
  BOOST_TEST((ml::validate(c, &why) == ml::errc::invalid_options));
  BOOST_TEST(why.find("socket_timeout") != std::string::npos);
  c = {};
  c.server_selection_timeout = ml::limits::max_timeout + 1ms;
  BOOST_TEST((ml::validate(c, &why) == ml::errc::invalid_options));
}

BOOST_AUTO_TEST_CASE(lock_names) {
  std::string why;
  BOOST_TEST(!ml::validate_lock_name("report-42"));
  BOOST_TEST(!ml::validate_lock_name("\xC3\xA9t\xC3\xA9 \xF0\x9F\x94\x92"));  // "été 🔒"
  BOOST_TEST((ml::validate_lock_name("", &why) == ml::errc::invalid_name));
  BOOST_TEST((ml::validate_lock_name(std::string(513, 'a')) == ml::errc::invalid_name));
  BOOST_TEST(!ml::validate_lock_name(std::string(512, 'a')));
  BOOST_TEST((ml::validate_lock_name(std::string("a\0b", 3)) == ml::errc::invalid_name));
  BOOST_TEST((ml::validate_lock_name("\xFF", &why) == ml::errc::invalid_name));
  BOOST_TEST(why.find("UTF-8") != std::string::npos);
  BOOST_TEST((ml::validate_lock_name("\xC3") == ml::errc::invalid_name));          // truncated
  BOOST_TEST((ml::validate_lock_name("\xC0\xAF") == ml::errc::invalid_name));      // overlong '/'
  BOOST_TEST((ml::validate_lock_name("jobs#w", &why) == ml::errc::invalid_name));  // a permit's document
  BOOST_TEST((ml::validate_lock_name("\xED\xA0\x80") == ml::errc::invalid_name));  // surrogate
}

BOOST_AUTO_TEST_CASE(namespaces) {
  BOOST_TEST(!ml::validate_namespace("app", "distributed.locks"));
  BOOST_TEST((ml::validate_namespace("", "locks") == ml::errc::invalid_collection));
  BOOST_TEST((ml::validate_namespace("a.b", "locks") == ml::errc::invalid_collection));
  BOOST_TEST((ml::validate_namespace("app", "") == ml::errc::invalid_collection));
  BOOST_TEST((ml::validate_namespace("app", "lo$cks") == ml::errc::invalid_collection));
  BOOST_TEST((ml::validate_namespace("app", "system.users") == ml::errc::invalid_collection));
  BOOST_TEST((ml::validate_namespace("app", std::string(300, 'c')) == ml::errc::invalid_collection));
  // Found by fuzz/lock_name_fuzz.cpp: a database name was never checked for UTF-8.
  std::string why;
  BOOST_TEST((ml::validate_namespace("mongolo\xA3\x94", "locks", &why) == ml::errc::invalid_collection));
  BOOST_TEST(why == "database name is not valid UTF-8");
}

BOOST_AUTO_TEST_CASE(error_category_has_readable_messages) {
  BOOST_TEST(ml::category().name() == std::string("mongolock"));
  for (int e = 1; e <= static_cast<int>(ml::errc::ambiguous_result); ++e) {
    auto ec = make_error_code(static_cast<ml::errc>(e));
    BOOST_TEST(ec.message().find("unknown") == std::string::npos);
  }
  boost::system::error_code ec = ml::errc::lease_lost;
  BOOST_TEST(ec.message() == "the lease was lost (expired or taken over)");
}

BOOST_AUTO_TEST_CASE(uri_redaction_hides_passwords) {
  using ml::detail::redact_uri;
  BOOST_TEST(redact_uri("mongodb://alice:s3cret@h1,h2/?replicaSet=rs0") == "mongodb://alice:****@h1,h2/?replicaSet=rs0");
  BOOST_TEST(redact_uri("mongodb://h1:27017/db") == "mongodb://h1:27017/db");
  BOOST_TEST(redact_uri("mongodb://bob@h1/") == "mongodb://bob@h1/");
  BOOST_TEST(redact_uri("not a uri").find("not a uri") == 0u);
}

// Malformed text must not defeat redaction: the userinfo ends at the LAST '@' (a password may
// hold '/', ':', '@' or '?'), whatever the scheme looks like, or without one.
BOOST_AUTO_TEST_CASE(uri_redaction_survives_malformed_uris) {
  using ml::detail::redact_uri;
  BOOST_TEST(redact_uri("mongodb:/admin:PW@host") == "mongodb:/admin:****@host");
  BOOST_TEST(redact_uri("mongodb://u:Pw3SEC/RETc@127.0.0.1:1/") == "mongodb://u:****@127.0.0.1:1/");
  BOOST_TEST(redact_uri("mongodb://u:Pw0SE:CRETi@127.0.0.1:1/") == "mongodb://u:****@127.0.0.1:1/");
  BOOST_TEST(redact_uri("mongodb://u:p@ss?w@h1/db") == "mongodb://u:****@h1/db");
  BOOST_TEST(redact_uri("mongodb+srv://u:pw@cluster0.example.net/") == "mongodb+srv://u:****@cluster0.example.net/");
  BOOST_TEST(redact_uri("u:secret@host") == "u:****@host");
  BOOST_TEST(redact_uri("mongodb:u:secret@host").find("secret") == std::string::npos);
}

// A driver message may quote the password or a piece of it ("Password \"...\" must not have
// unescaped chars", or a host string cut at a '/' inside the password).
BOOST_AUTO_TEST_CASE(messages_are_scrubbed_of_the_password) {
  using ml::detail::hide_password;
  const std::string uri = "mongodb://u:Pw0SE:CRETi@127.0.0.1:1/";
  BOOST_TEST(hide_password("Password \"Pw0SE:CRETi\" must not have unescaped chars", uri).find("CRET") == std::string::npos);
  BOOST_TEST(hide_password("Invalid host string: u:Pw0SE", uri).find("Pw0SE") == std::string::npos);
  BOOST_TEST(hide_password("Invalid host string in URI", uri) == "Invalid host string in URI");
  BOOST_TEST(hide_password("Invalid URI Schema", "mongodb://h1/") == "Invalid URI Schema");
  // Percent-decoded, as the driver may quote it after decoding.
  BOOST_TEST(hide_password("bad password 'a@bSECRET'", "mongodb://u:a%40bSECRET@h/").find("SECRET") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(malformed_uri_errors_never_quote_the_password) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"mongodb:/admin:PW@host", {"PW"}},
      {"mongodb://u:Pw3SEC/RETc@127.0.0.1:1/", {"SEC", "RET"}},
      {"mongodb://u:Pw0SE:CRETi@127.0.0.1:1/", {"SE", "CRET"}},
      {"mongodb://u:SEC%zzRET@127.0.0.1:1/", {"SEC", "RET"}},
      {"mongodb://alice:s3cr3t@host:notaport/", {"s3cr3t"}}};
  for (const auto& [uri, secrets] : cases) BOOST_TEST_CONTEXT(uri) {
      boost::system::error_code ec;
      std::string why;
      BOOST_TEST(!ml::detail::driver::create(uri, {}, ec, why));
      BOOST_TEST((ec == ml::errc::invalid_uri));
      for (const auto& secret : secrets) BOOST_TEST(why.find(secret) == std::string::npos, why);
    }
}

// Found by fuzz/redact_fuzz.cpp: libmongoc reads a connection string only up to a NUL byte, so
// "mongodb://u:pw@h1\0,h2" silently meant h1 alone, and a password cut there escaped redaction.
BOOST_AUTO_TEST_CASE(a_uri_with_a_nul_byte_is_refused) {
  const std::string uri("mongodb://u:QXZ@\x01\0/u:QXZ@other/", 31);
  boost::system::error_code ec;
  std::string why;
  BOOST_TEST(!ml::detail::driver::create(uri, {}, ec, why));
  BOOST_TEST((ec == ml::errc::invalid_uri));
  BOOST_TEST(why.find("NUL") != std::string::npos, why);
  BOOST_TEST(why.find("QXZ") == std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(server_versions_below_4_0_are_refused) {
  std::string why;
  BOOST_TEST((ml::detail::check_server({"3.6.23", 6}, &why) == ml::errc::unsupported_server));
  BOOST_TEST(why.find("3.6.23") != std::string::npos);
  BOOST_TEST(!ml::detail::check_server({"4.0.0", 7}, &why));
  BOOST_TEST(!ml::detail::check_server({"8.0.4", 25}, &why));
}

BOOST_AUTO_TEST_CASE(owner_ids_are_128_random_bits_in_hex) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto id = ml::detail::new_owner_id();
    BOOST_TEST(id.size() == 32u);
    BOOST_TEST(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(id);
  }
  BOOST_TEST(seen.size() == 1000u);
}

BOOST_AUTO_TEST_SUITE_END()
