#include "mongolock/error.hpp"

#include <string>

namespace mongolock {
namespace {

class category_impl final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "mongolock"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::timeout: return "the lock was not acquired before the timeout";
      case errc::busy: return "the lock is held by another owner";
      case errc::lease_lost: return "the lease was lost (expired or taken over)";
      case errc::released: return "the lease was released";
      case errc::not_held: return "the lease is not held (never acquired or already released)";
      case errc::invalid_name: return "invalid lock name";
      case errc::invalid_collection: return "invalid database or collection name";
      case errc::invalid_options: return "invalid options";
      case errc::invalid_uri: return "invalid MongoDB connection string";
      case errc::server_unavailable: return "MongoDB server unavailable";
      case errc::server_error: return "MongoDB server returned an error";
      case errc::unsupported_server: return "MongoDB server version is not supported";
      case errc::ambiguous_result: return "the outcome of a write could not be determined";
      case errc::not_authorized: return "not authorized by the MongoDB server (authentication or privileges)";
      case errc::declaration_mismatch: return "the name is already declared with another kind or number of permits";
      case errc::fenced_out: return "fenced out: a newer fencing token has written the document";
      case errc::invalid_document: return "invalid filter or update document";
    }
    return "unknown mongolock error";
  }
};

}  // namespace

const boost::system::error_category& category() noexcept {
  static const category_impl instance;
  return instance;
}

}  // namespace mongolock
