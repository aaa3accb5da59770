#pragma once
// A store that hands every operation to the store below it, unchanged: the base of the engine's
// store decorators (engine/group_commit.hpp, engine/splitting_store.hpp), each of which overrides
// only the operations it changes.
#include <memory>
#include <string>
#include <vector>

#include "store/lock_store.hpp"

namespace mongolock::detail {

class forwarding_store : public lock_store {
 public:
  explicit forwarding_store(std::shared_ptr<lock_store> inner) : inner_(std::move(inner)) {}

  void prepare(reply<outcome<server_info>> r) override { inner_->prepare(std::move(r)); }
  void read(const std::string& name, read_mode m, reply<outcome<lock_doc>> r) override {
    inner_->read(name, m, std::move(r));
  }
  void read_each(const std::vector<std::string>& names, read_mode m, reply<outcome<std::vector<lock_doc>>> r) override {
    inner_->read_each(names, m, std::move(r));
  }
  void list(reply<outcome<std::vector<named_doc>>> r) override { inner_->list(std::move(r)); }
  void take(const take_request& t, reply<outcome<bool>> r) override { inner_->take(t, std::move(r)); }
  void renew(const std::vector<held_lease>& held, std::chrono::milliseconds expiry,
             reply<outcome<std::vector<bool>>> r) override {
    inner_->renew(held, expiry, std::move(r));
  }
  void release(const std::string& name, const std::string& owner, std::int64_t token, reply<outcome<bool>> r) override {
    inner_->release(name, owner, token, std::move(r));
  }
  void release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                      reply<outcome<std::int64_t>> r) override {
    inner_->release_owners(names, owners, std::move(r));
  }
  void write_grouped(const std::vector<grouped_write>& w, reply<outcome<std::vector<grouped_outcome>>> r) override {
    inner_->write_grouped(w, std::move(r));
  }
  void join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                 reply<outcome<bool>> r) override {
    inner_->join_line(name, owner, ticket, std::move(r));
  }
  void leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) override {
    inner_->leave_line(name, owner, std::move(r));
  }
  void refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                    reply<outcome<bool>> r) override {
    inner_->refresh_line(name, owner, ticket, std::move(r));
  }
  void proclaim(const std::string& name, const std::string& owner, std::int64_t token, const std::string& value,
                reply<outcome<bool>> r) override {
    inner_->proclaim(name, owner, token, value, std::move(r));
  }
  void record_run(const std::string& name, const std::string& owner, std::int64_t token,
                  reply<outcome<bool>> r) override {
    inner_->record_run(name, owner, token, std::move(r));
  }
  void declare(const std::string& name, const declaration& d, reply<outcome<declaration>> r) override {
    inner_->declare(name, d, std::move(r));
  }
  void force_release(const std::string& name, bool immediate, reply<outcome<std::string>> r) override {
    inner_->force_release(name, immediate, std::move(r));
  }
  bool accepting() const noexcept override { return inner_->accepting(); }

 protected:
  const std::shared_ptr<lock_store> inner_;
};

}  // namespace mongolock::detail
