// The URI redactor, fuzzed: thousands of generated connection strings, well
// formed and not, whose passwords are full of what defeats a naive redactor ('/', ':', '@', '?',
// '#', ',', '%' and percent escapes). Whatever libmongoc makes of each, neither the redacted URI
// nor the error the client constructor would throw may contain a piece of the password. Seeded,
// so a failure names its case and reproduces.
#include <boost/test/unit_test.hpp>
#include <random>
#include <string>
#include <vector>

#include "store/driver.hpp"
#include "mongolock/options.hpp"

namespace ml = mongolock;

namespace {

// Password letters come only from here, and nothing else in a generated URI uses them (hosts and
// users are lower case, options too), nor do libmongoc's messages contain two of them in a row:
// any two of them side by side in the output is a leak.
constexpr std::string_view marker_letters = "QXZJKVW";

struct generator {
  std::mt19937 rng{20261122};

  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }

  std::string password() {
    static const std::vector<std::string> specials{"/", ":", "@", "?", "#", ",", "%", "%2F", "%40", "%3A", "%25", "%zz", "="};
    std::string p;
    const auto letters = 4 + below(8);
    for (std::size_t i = 0; i < letters; ++i) {
      p += marker_letters[below(marker_letters.size())];
      if (below(3) == 0) p += pick(specials);
    }
    return p;
  }
  std::string uri(const std::string& pw) {
    static const std::vector<std::string> schemes{"mongodb://", "mongodb+srv://", "mongodb:/", "mongodb:", "",
                                                  "mongo://", "mongodb:///", "mongodb://:"};
    static const std::vector<std::string> users{"u", "alice", "", "a.b", "u%20"};
    static const std::vector<std::string> hosts{"h1", "h1:27017", "h1,h2:1", "[::1]:1", "h1:notaport", "", "127.0.0.1:1",
                                                "h1.example"};  // not a resolvable SRV name: no DNS query
    static const std::vector<std::string> tails{"", "/", "/db", "/?tls=false", "/db?w=majority&appname=x", "?w=1",
                                                "/db?authsource=admin", "/?x"};
    return pick(schemes) + pick(users) + ":" + pw + "@" + pick(hosts) + pick(tails);
  }
};

// Two password letters side by side anywhere in `text`.
bool leaks(const std::string& text) {
  for (std::size_t i = 0; i + 1 < text.size(); ++i)
    if (marker_letters.find(text[i]) != std::string_view::npos && marker_letters.find(text[i + 1]) != std::string_view::npos)
      return true;
  return false;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(redaction_fuzz)

BOOST_AUTO_TEST_CASE(no_generated_uri_ever_shows_its_password) {
  generator g;
  int rejected = 0, accepted = 0, failures = 0;
  for (int i = 0; i < 3000 && failures < 10; ++i) {
    const auto pw = g.password();
    const auto uri = g.uri(pw);
    const auto redacted = ml::detail::redact_uri(uri);
    boost::system::error_code ec;
    std::string why;
    auto d = ml::detail::driver::create(uri, ml::client_options{}, ec, why);
    const std::string shown = d ? d->redacted_uri() : why;
    d ? ++accepted : ++rejected;
    if (leaks(redacted) || leaks(shown)) {
      ++failures;
      BOOST_ERROR("case " << i << ": " << uri << " -> redacted '" << redacted << "', shown '" << shown << "'");
    }
  }
  BOOST_TEST_MESSAGE("redaction fuzz: " << accepted << " accepted, " << rejected << " rejected by the driver");
  BOOST_TEST(accepted > 0);  // both paths exercised: the driver's own messages and the redacted URI
  BOOST_TEST(rejected > 0);
}

BOOST_AUTO_TEST_SUITE_END()
