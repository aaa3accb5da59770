#pragma once
// The initiation object of every mongolock operation: the function that starts it, plus the
// executor of the object it runs on. Asio's convention: token adapters such as
// asio::cancel_after (Boost 1.86 and later) look the executor up through get_executor().
#include <boost/asio/any_io_executor.hpp>
#include <utility>

namespace mongolock::detail {

template <class Start>
class initiation {
 public:
  using executor_type = boost::asio::any_io_executor;

  initiation(executor_type ex, Start start) : ex_(std::move(ex)), start_(std::move(start)) {}
  executor_type get_executor() const noexcept { return ex_; }

  template <class Handler, class... Args>
  void operator()(Handler&& handler, Args&&... args) const {
    start_(std::forward<Handler>(handler), std::forward<Args>(args)...);
  }

 private:
  executor_type ex_;
  Start start_;
};

template <class Start>
initiation<Start> make_initiation(boost::asio::any_io_executor ex, Start start) {
  return initiation<Start>(std::move(ex), std::move(start));
}

}  // namespace mongolock::detail
