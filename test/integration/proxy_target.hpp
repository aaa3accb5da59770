#pragma once
// Where a fault proxy can stand: the server of a single-host URI without credentials (the
// proxy forwards to one address; the suites build the proxied URI themselves).
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "fixture.hpp"

namespace test {

struct host_port {
  std::string host;
  std::uint16_t port = 0;
};

// The server behind a URI of one host without credentials (mongodb://host:port/?...): the proxy
// forwards to one address and the tests build the proxied URI themselves.
inline std::optional<host_port> single_host(const std::string& uri) {
  const std::string scheme = "mongodb://";
  if (uri.rfind(scheme, 0) != 0) return std::nullopt;
  const auto hosts = uri.substr(scheme.size(), uri.find_first_of("/?", scheme.size()) - scheme.size());
  if (hosts.empty() || hosts.find_first_of(",@[") != std::string::npos) return std::nullopt;
  const auto colon = hosts.rfind(':');
  if (colon == std::string::npos) return host_port{hosts, 27017};
  return host_port{hosts.substr(0, colon), static_cast<std::uint16_t>(std::stoi(hosts.substr(colon + 1)))};
}

inline std::string configured_uri() {
  if (const char* u = std::getenv("MONGOLOCK_TEST_URI")) return u;
  return read_file(server_dir() + "/uri");
}

// The suite's precondition: a server the proxy can stand in front of. (No server at all is left
// to the fixture, which fails saying so, as every integration suite does.)
struct proxyable {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    const auto uri = configured_uri();
    boost::test_tools::assertion_result ok(uri.empty() || single_host(uri).has_value());
    if (!ok) ok.message() << "skipped: the fault proxy needs a single-host URI without credentials";
    return ok;
  }
};

}  // namespace test
