#pragma once
// Umbrella header: a distributed lock for Boost.Asio servers, stored in MongoDB.
#include "mongolock/client.hpp"
#include "mongolock/election.hpp"
#include "mongolock/error.hpp"
#include "mongolock/lease.hpp"
#include "mongolock/limits.hpp"
#include "mongolock/lock.hpp"
#include "mongolock/multi_lock.hpp"
#include "mongolock/options.hpp"
#include "mongolock/provider.hpp"
#include "mongolock/rw_lock.hpp"
#include "mongolock/semaphore.hpp"
#include "mongolock/stats.hpp"
