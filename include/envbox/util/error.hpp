#pragma once
/// The one error model of envbox.
///
/// Expected failures of pure code (a bad version string, a bad manifest) come back as
/// `Result<T>`; deeper layers throw `Error`. Both carry an `ErrorCode`, which `cli/main.cpp`
/// (the only catch site) maps to the process exit status, and a context chain that grows as the
/// error propagates ("while linking torch 2.11.0+cu128 into train-cu128 gen 4").

#include <cassert>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

namespace envbox {

/// What went wrong, coarsely; each code is one documented exit status.
enum class ErrorCode : int {
    generic = 1,        ///< anything not covered below
    usage = 2,          ///< bad command line
    invalid_input = 3,  ///< manifest or lock invalid or stale, no matching interpreter
    network = 4,        ///< network or package-index failure
    integrity = 5,      ///< hash mismatch; verify found drift
    cuda = 6,           ///< CUDA line incompatible with the driver or with the lock
    conflict = 7,       ///< two wheels install one path with different content (install conflict)
    unlinked = 8,  ///< a native file needs a symbol its environment's library lacks (link check)
    runtime = 9,   ///< `check`: a module does not import, or torch was not built for the GPU
    interrupted = 130,  ///< SIGINT / SIGTERM
};

/// The process exit status for `code`.
constexpr int exit_status(ErrorCode code) {
    return static_cast<int>(code);
}

/// A failure with a code, a message and a context chain; a failed system call's also keeps its
/// errno (as Nix's `SysError` does), so a caller decides on ENOSPC, EXDEV or EMLINK without
/// reading the message.
class Error : public std::exception {
  public:
    Error(ErrorCode code, std::string message);
    /// A failed system call: `sys_errno` is the errno it set (the message already says it).
    Error(ErrorCode code, std::string message, int sys_errno);

    ErrorCode code() const { return code_; }
    const std::string& message() const { return message_; }
    /// The errno of the failed system call this error reports; 0 when it reports none.
    int sys_errno() const { return sys_errno_; }
    /// Context lines, innermost first ("while parsing manifests/train.toml").
    const std::vector<std::string>& context() const { return context_; }

    /// Appends one context line (outermost last) and returns *this for rethrowing.
    Error& add_context(std::string line);

    /// The message followed by the context chain, one "  while …" line each, outermost last.
    std::string describe() const;

    const char* what() const noexcept override { return message_.c_str(); }

  private:
    ErrorCode code_;
    std::string message_;
    std::vector<std::string> context_;
    int sys_errno_ = 0;
};

/// The `Error` (generic) of a system call that failed with `err`: the message
/// "WHAT: strerror(err)" ("cannot open /x: No such file or directory"), `sys_errno()` `err`.
Error sys_error(std::string_view what, int err);

/// The same for a `std::filesystem` call's `ec`: "WHAT: ec.message()", `sys_errno()` its value
/// when `ec` is an errno (system or generic category), else 0.
Error sys_error(std::string_view what, const std::error_code& ec);

/// A value or an `Error`, for failures the caller is expected to handle.
template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
    Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    /// The value; throws the held error when there is none.
    T& value() & {
        if (!ok()) throw std::get<1>(v_);
        return std::get<0>(v_);
    }
    const T& value() const& {
        if (!ok()) throw std::get<1>(v_);
        return std::get<0>(v_);
    }
    T&& value() && {
        if (!ok()) throw std::get<1>(v_);
        return std::get<0>(std::move(v_));
    }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    /// The error; only valid when `!ok()`.
    const Error& error() const {
        assert(!ok());
        return std::get<1>(v_);
    }

  private:
    std::variant<T, Error> v_;
};

/// Builds an `Error` for text that failed to parse: the message, then the input and a caret
/// under column `pos` (0-based), as packaging and pip show it.
Error parse_error(std::string_view what, std::string_view input, std::size_t pos);

}  // namespace envbox
