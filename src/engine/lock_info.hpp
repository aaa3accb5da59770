#pragma once
// A lock document as the public lock_info (inspect, list, the CLI's status): a copy of fields,
// in one place so that the fuzz target of hostile documents checks the same conversion.
#include <string>

#include "store/lock_store.hpp"
#include "mongolock/provider.hpp"

namespace mongolock::detail {

inline lock_info to_info(std::string name, const lock_doc& d) {
  lock_info i;
  i.name = std::move(name);
  i.exists = d.exists;
  i.held = d.exists && !d.held.owner.empty();
  i.owner = d.held.owner;
  i.fencing_token = d.held.token;
  i.heartbeat = d.held.beat;
  i.expiry = d.held.expiry;
  i.acquired_at_ms = d.acquired_at_ms;
  i.renewed_at_ms = d.renewed_at_ms;
  i.last_completed_token = d.last_run_token;
  if (d.meta) {
    i.host = d.meta->host;
    i.pid = d.meta->pid;
    i.label = d.meta->label;
    i.value = d.meta->value;
  }
  return i;
}

}  // namespace mongolock::detail
