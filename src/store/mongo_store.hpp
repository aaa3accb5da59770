#pragma once
// The lock store on a real server: each operation is one blocking libmongoc command (store.hpp)
// run on the client's worker pool; renewals and releases take the maintenance lane.
#include <memory>

#include "store/client_impl.hpp"
#include "store/lock_store.hpp"
#include "store/mongo_commands.hpp"

namespace mongolock::detail {

class mongo_store final : public lock_store {
 public:
  mongo_store(std::shared_ptr<client_impl> client, store_config cfg)
      : client_(std::move(client)), cfg_(std::make_shared<const store_config>(std::move(cfg))) {}

  void prepare(reply<outcome<server_info>> r) override;
  void read(const std::string& name, read_mode mode, reply<outcome<lock_doc>> r) override;
  void read_each(const std::vector<std::string>& names, read_mode mode, reply<outcome<std::vector<lock_doc>>> r) override;
  void list(reply<outcome<std::vector<named_doc>>> r) override;
  void take(const take_request& t, reply<outcome<bool>> r) override;
  void renew(const std::vector<held_lease>& held, std::chrono::milliseconds expiry,
             reply<outcome<std::vector<bool>>> r) override;
  void release(const std::string& name, const std::string& owner, std::int64_t token,
               reply<outcome<bool>> r) override;
  void write_grouped(const std::vector<grouped_write>& writes, reply<outcome<std::vector<grouped_outcome>>> r) override;
  void release_owners(const std::vector<std::string>& names, const std::vector<std::string>& owners,
                      reply<outcome<std::int64_t>> r) override;
  void join_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                 reply<outcome<bool>> r) override;
  void leave_line(const std::string& name, const std::string& owner, reply<outcome<bool>> r) override;
  void refresh_line(const std::string& name, const std::string& owner, std::int64_t ticket,
                    reply<outcome<bool>> r) override;
  void declare(const std::string& name, const declaration& d, reply<outcome<declaration>> r) override;
  void record_run(const std::string& name, const std::string& owner, std::int64_t token,
                  reply<outcome<bool>> r) override;
  void proclaim(const std::string& name, const std::string& owner, std::int64_t token, const std::string& value,
                reply<outcome<bool>> r) override;
  void force_release(const std::string& name, bool immediate, reply<outcome<std::string>> r) override;
  bool accepting() const noexcept override { return !client_->stopped; }

 private:
  // client_impl::run on this store's client.
  template <class R, class Fn>
  void run(lane l, reply<R> r, Fn fn);

  std::shared_ptr<client_impl> client_;
  // Shared, not copied, into each queued job: 10,000 waiters' reads queue 16 bytes each, not 88.
  std::shared_ptr<const store_config> cfg_;
};

}  // namespace mongolock::detail
