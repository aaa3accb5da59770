#include "fault_proxy.hpp"

#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

enum direction : int { upward = 0, downward = 1 };  // client -> upstream, upstream -> client

// What every connection's writers obey. Only touched on the proxy's thread, so a mode change is
// a plain assignment followed by waking the writers.
struct rules {
  std::chrono::milliseconds latency{0};
  clock_type::time_point gate[2]{};  // a direction delivers nothing before its gate (a hold)
  bool blocked[2]{false, false};     // nothing until the mode changes (a blackhole)
  bool refuse = false;
};

struct shared_counters {
  std::atomic<std::uint64_t> accepted{0}, refused{0}, reset{0}, open{0}, bytes[2]{}, delivered[2]{};
};

// Closes a socket with an RST instead of a FIN: what a crashed peer or a middlebox dropping the
// connection looks like, and the only way to make the driver see ECONNRESET mid-call.
void close_abruptly(tcp::socket& s) {
  error_code ignored;
  if (!s.is_open()) return;
  s.set_option(asio::socket_base::linger(true, 0), ignored);
  s.close(ignored);
}

// One accepted connection and its upstream twin. Every handler holds a shared_ptr to it, so it
// lives until the last operation on it has completed; nothing else owns it (the proxy keeps weak
// pointers only, to find it for reset()).
class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(asio::io_context& io, tcp::socket client, const rules& r, shared_counters& n)
      : rules_(r),
        count_(n),
        client_(std::move(client)),
        upstream_(io),
        pipes_{pipe(client_, upstream_, io), pipe(upstream_, client_, io)} {
    count_.open.fetch_add(1, std::memory_order_relaxed);
  }
  ~connection() { count_.open.fetch_sub(1, std::memory_order_relaxed); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void start(const tcp::endpoint& to) {
    upstream_.async_connect(to, [self = shared_from_this()](error_code ec) {
      if (self->closed_) return;
      if (ec) {
        self->abort();
        return;
      }
      error_code ignored;
      // Each chunk goes out as it came in: Nagle would merge and delay what the tests time.
      self->client_.set_option(tcp::no_delay(true), ignored);
      self->upstream_.set_option(tcp::no_delay(true), ignored);
      self->read(upward);
      self->read(downward);
    });
  }

  // The rules changed: a writer waiting for a chunk's time recomputes it.
  void wake() {
    for (int d : {upward, downward}) {
      if (pipes_[d].state == pipe::waiting) pipes_[d].timer.cancel();
      else pump(d);
    }
  }

  // RST on both sides; what was held is dropped. Pending handlers then see closed_ and stop.
  // False if it was closed already.
  bool abort() {
    if (closed_) return false;
    closed_ = true;
    for (auto& p : pipes_) {
      p.timer.cancel();
      p.queue.clear();
    }
    close_abruptly(client_);
    close_abruptly(upstream_);
    return true;
  }

 private:
  struct chunk {
    clock_type::time_point read_at;
    std::vector<char> bytes;
  };
  // One direction: a reader that queues every chunk with the time it arrived, and a writer
  // (pump) that delivers the queue in order, each chunk when the rules allow.
  struct pipe {
    pipe(tcp::socket& f, tcp::socket& t, asio::io_context& io) : from(f), to(t), timer(io) {}
    tcp::socket& from;
    tcp::socket& to;
    asio::steady_timer timer;
    std::array<char, 16384> buffer;
    std::deque<chunk> queue;
    enum { idle, waiting, writing, finished } state = idle;
    bool eof = false;
  };

  void read(int d) {
    auto& p = pipes_[d];
    p.from.async_read_some(asio::buffer(p.buffer), [self = shared_from_this(), d](error_code ec, std::size_t n) {
      if (self->closed_) return;
      auto& p = self->pipes_[d];
      if (n > 0) {
        self->count_.bytes[d].fetch_add(n, std::memory_order_relaxed);
        p.queue.push_back({clock_type::now(), std::vector<char>(p.buffer.begin(), p.buffer.begin() + n)});
      }
      // EOF, or a reset by this side: stop reading it; what it sent is still delivered.
      if (ec) p.eof = true;
      else self->read(d);
      self->pump(d);
    });
  }

  void pump(int d) {
    auto& p = pipes_[d];
    if (closed_ || p.state != pipe::idle) return;
    if (p.queue.empty()) {
      if (!p.eof) return;
      // Everything the closing side sent has been delivered: pass its FIN on.
      error_code ignored;
      p.to.shutdown(tcp::socket::shutdown_send, ignored);
      p.state = pipe::finished;
      return;
    }
    if (rules_.blocked[d]) return;  // wake() runs pump again when the mode changes
    const auto due = std::max(p.queue.front().read_at + rules_.latency, rules_.gate[d]);
    if (clock_type::now() < due) {
      p.state = pipe::waiting;
      p.timer.expires_at(due);
      // Also runs when cancelled by wake(): the new rules decide.
      p.timer.async_wait([self = shared_from_this(), d](error_code) {
        self->pipes_[d].state = pipe::idle;
        self->pump(d);
      });
      return;
    }
    p.state = pipe::writing;
    asio::async_write(p.to, asio::buffer(p.queue.front().bytes),
                      [self = shared_from_this(), d](error_code ec, std::size_t n) {
                        auto& p = self->pipes_[d];
                        p.state = pipe::idle;
                        if (self->closed_) return;
                        if (ec) {
                          self->abort();  // the receiver is gone: so is the connection
                          return;
                        }
                        self->count_.delivered[d].fetch_add(n, std::memory_order_relaxed);
                        p.queue.pop_front();
                        self->pump(d);
                      });
  }

  const rules& rules_;
  shared_counters& count_;
  tcp::socket client_, upstream_;
  pipe pipes_[2];
  bool closed_ = false;
};

}  // namespace

struct fault_proxy::impl {
  asio::io_context io{1};
  // Until the destructor: run() must not return while the proxy lives, whatever is pending.
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  tcp::acceptor acceptor{io};
  tcp::endpoint upstream;
  std::uint16_t port = 0;
  rules now;                                       // proxy thread only
  std::vector<std::weak_ptr<connection>> connections;  // proxy thread only
  shared_counters count;
  bool closing = false;  // proxy thread only
  std::thread thread;

  void accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket s) {
      if (closing) return;
      if (!ec) admit(std::move(s));
      accept();
    });
  }

  void admit(tcp::socket s) {
    count.accepted.fetch_add(1, std::memory_order_relaxed);
    if (now.refuse) {
      count.refused.fetch_add(1, std::memory_order_relaxed);
      close_abruptly(s);
      return;
    }
    std::erase_if(connections, [](const auto& w) { return w.expired(); });
    auto c = std::make_shared<connection>(io, std::move(s), now, count);
    connections.push_back(c);
    c->start(upstream);
  }

  template <class F>
  void for_each_connection(F f) {
    for (auto& w : connections)
      if (auto c = w.lock()) f(*c);
  }

  // Runs `f` on the proxy's thread and waits for it: when a mode call returns, the mode holds
  // for every byte read afterwards. (Never call from the proxy's thread: it would wait for itself.)
  template <class F>
  void on_proxy_thread(F f) {
    std::promise<void> done;
    auto finished = done.get_future();
    asio::post(io, [&] {
      f();
      done.set_value();
    });
    finished.wait();
  }

  void set(rules r) {
    on_proxy_thread([&] {
      now = r;
      for_each_connection([](connection& c) { c.wake(); });
    });
  }
};

fault_proxy::fault_proxy(const std::string& upstream_host, std::uint16_t upstream_port) : impl_(new impl) {
  tcp::resolver resolver(impl_->io);
  const auto found = resolver.resolve(upstream_host, std::to_string(upstream_port));
  if (found.empty()) throw std::runtime_error("fault_proxy: cannot resolve " + upstream_host);
  impl_->upstream = found.begin()->endpoint();
  for (const auto& e : found)  // "localhost" may come as ::1 first; the test server listens on IPv4
    if (e.endpoint().address().is_v4()) {
      impl_->upstream = e.endpoint();
      break;
    }
  const tcp::endpoint listen_on(asio::ip::address_v4::loopback(), 0);
  impl_->acceptor.open(listen_on.protocol());
  impl_->acceptor.bind(listen_on);
  impl_->acceptor.listen();
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

fault_proxy::~fault_proxy() {
  impl_->on_proxy_thread([this] {
    impl_->closing = true;
    error_code ignored;
    impl_->acceptor.close(ignored);
    impl_->for_each_connection([](connection& c) { c.abort(); });
    impl_->work.reset();  // run() returns once the aborted operations have completed
  });
  impl_->thread.join();
}

std::uint16_t fault_proxy::port() const noexcept { return impl_->port; }

void fault_proxy::pass() { impl_->set(rules{}); }

void fault_proxy::latency(std::chrono::milliseconds d) {
  rules r;
  r.latency = d;
  impl_->set(r);
}

void fault_proxy::hold_replies(std::chrono::milliseconds d) {
  rules r;
  r.gate[downward] = clock_type::now() + d;
  impl_->set(r);
}

void fault_proxy::hold_requests(std::chrono::milliseconds d) {
  rules r;
  r.gate[upward] = clock_type::now() + d;
  impl_->set(r);
}

void fault_proxy::blackhole() {
  rules r;
  r.blocked[upward] = r.blocked[downward] = true;
  impl_->set(r);
}

void fault_proxy::refuse() {
  rules r;
  r.refuse = true;
  impl_->set(r);
}

void fault_proxy::reset() {
  impl_->on_proxy_thread([this] {
    impl_->for_each_connection([this](connection& c) {
      if (c.abort()) impl_->count.reset.fetch_add(1, std::memory_order_relaxed);
    });
  });
}

fault_proxy::counters fault_proxy::stats() const noexcept {
  const auto& c = impl_->count;
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  counters out;
  out.accepted = get(c.accepted);
  out.refused = get(c.refused);
  out.reset = get(c.reset);
  out.open = get(c.open);
  out.bytes_up = get(c.bytes[upward]);
  out.bytes_down = get(c.bytes[downward]);
  out.delivered_up = get(c.delivered[upward]);
  out.delivered_down = get(c.delivered[downward]);
  return out;
}

}  // namespace test
