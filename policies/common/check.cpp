// Error message formatting for check.h.
#include "policies/common/check.h"

namespace deepinfer {

InputError::InputError(std::string file, std::string pointer, std::string expected, std::string got)
    : std::runtime_error(file + ": " + (pointer.empty() ? std::string("/") : pointer) + ": expected " +
                         expected + ", got " + got),
      file_(std::move(file)),
      pointer_(std::move(pointer)) {}

InputError::InputError(std::string file, std::string message)
    : std::runtime_error(file + ": " + message), file_(std::move(file)) {}

namespace detail {
void throw_internal(const char* file, int line, const char* cond, const std::string& msg) {
    std::ostringstream os;
    os << file << ":" << line << ": check `" << cond << "` failed";
    if (!msg.empty()) os << ": " << msg;
    throw InternalError(os.str());
}
}  // namespace detail

}  // namespace deepinfer
