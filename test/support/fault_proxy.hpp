#pragma once
// A TCP proxy on loopback that breaks the network on purpose (docs/design.md section 11). The test
// server stays real; what the emulator cannot do by itself happens in between: replies that arrive
// after the caller's deadline, requests applied late, partitions that heal, connections reset
// mid-call. The memory store (memory_store.hpp) breaks the engine below the driver; this breaks the
// wire, so libmongoc's own timeouts, retries and pool clearing are part of what is tested.
//
// It listens on 127.0.0.1 on an ephemeral port and forwards every accepted connection to one
// upstream host:port, on an io_context thread of its own: the tests' io_context and the client's
// worker threads can block or be busy without the network stopping. Each connection relays both
// ways, in order: a chunk read from one side is delivered to the other once the mode lets it.
//
// Modes (each call replaces the previous mode, for every connection, existing and new; it has
// taken effect when the call returns). Bytes already held follow the new mode: pass() delivers
// them at once, in order, as a healed partition does. Nothing is ever dropped except by reset().
//   pass()             forward as they come.
//   latency(d)         every chunk, both ways, is delivered d after it was read.
//   hold_replies(d)    upstream -> client bytes wait until d from now, then flow again (a
//   hold_requests(d)   partition of that direction that heals by itself); the other way flows.
//   blackhole()        both ways held until the mode changes: new connections are accepted
//                      and connected upstream, but nothing is forwarded and nothing answered;
//                      data is read and kept (the senders see their writes succeed), neither
//                      delivered nor dropped, so a later pass() delivers it all, in order.
//   refuse()           new connections are closed at once (RST); existing ones forward.
// Action:
//   reset()            every open connection is closed abruptly on both sides (RST, SO_LINGER
//                      0); what it held is dropped. The mode stays as it is.
//
// A side that closes (EOF) is half-closed on the other side once its held bytes are delivered,
// so a request held past its sender's timeout still reaches the server when the hold ends (a
// late write, applied after the caller gave up). A failed write resets the connection.
//
// Thread safety: every member may be called from any thread except the proxy's own (the mode
// calls wait for it). The destructor closes everything and joins the thread.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace test {

class fault_proxy {
 public:
  struct counters {
    std::uint64_t accepted = 0;        // connections accepted, refused ones included
    std::uint64_t refused = 0;         // closed at once by refuse()
    std::uint64_t reset = 0;           // closed by reset()
    std::uint64_t open = 0;            // open now
    std::uint64_t bytes_up = 0;        // read from clients (requests), held or not
    std::uint64_t bytes_down = 0;      // read from upstream (replies), held or not
    std::uint64_t delivered_up = 0;    // written to upstream
    std::uint64_t delivered_down = 0;  // written to clients
  };

  // Resolves `upstream_host` (a name or an address) now; throws if it cannot be resolved or the
  // listening socket cannot be opened.
  fault_proxy(const std::string& upstream_host, std::uint16_t upstream_port);
  ~fault_proxy();
  fault_proxy(const fault_proxy&) = delete;
  fault_proxy& operator=(const fault_proxy&) = delete;

  // The ephemeral port it listens on, on 127.0.0.1.
  std::uint16_t port() const noexcept;

  void pass();
  void latency(std::chrono::milliseconds d);
  void hold_replies(std::chrono::milliseconds d);
  void hold_requests(std::chrono::milliseconds d);
  void blackhole();
  void refuse();
  void reset();

  counters stats() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace test
