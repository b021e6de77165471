// Error types and the DI_CHECK invariant macro shared by every component.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace deepinfer {

/// A broken internal invariant (a bug in DeepInfer, not bad input). Carries file:line.
class InternalError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

/// Bad user input. `what()` is one line: `<file>: <json pointer>: expected <x>, got <y>`.
class InputError : public std::runtime_error {
public:
    InputError(std::string file, std::string pointer, std::string expected, std::string got);
    /// For errors that have no JSON pointer (a missing file, a tensor name): `<file>: <message>`.
    InputError(std::string file, std::string message);

    const std::string& file() const { return file_; }
    const std::string& pointer() const { return pointer_; }

private:
    std::string file_;
    std::string pointer_;
};

class ConfigError : public InputError {
public:
    using InputError::InputError;
};
class ProfileError : public InputError {
public:
    using InputError::InputError;
};
class TraceError : public InputError {
public:
    using InputError::InputError;
};
class CheckpointError : public InputError {
public:
    using InputError::InputError;
};

namespace detail {
[[noreturn]] void throw_internal(const char* file, int line, const char* cond, const std::string& msg);
}  // namespace detail

}  // namespace deepinfer

/// Throws InternalError("file:line: check `cond` failed: msg") when `cond` is false.
/// `msg` is a stream expression: DI_CHECK(n > 0, "n=" << n).
#define DI_CHECK(cond, msg)                                                                \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            std::ostringstream di_check_os_;                                               \
            di_check_os_ << msg;                                                           \
            ::deepinfer::detail::throw_internal(__FILE__, __LINE__, #cond, di_check_os_.str()); \
        }                                                                                  \
    } while (0)
