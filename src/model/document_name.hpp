#pragma once
// The rule for any lock document's _id: validate_lock_name's without its ban on '#', for the
// permits of a semaphore or rw_lock (NAME#k, NAME#w), which only their owner acquires, and for
// reading or force-releasing any document (status, list, force).
#include <boost/system/error_code.hpp>
#include <string>
#include <string_view>

namespace mongolock::detail {

boost::system::error_code validate_document_name(std::string_view name, std::string* why = nullptr);

}  // namespace mongolock::detail
