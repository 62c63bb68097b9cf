#pragma once
/// `UniqueFd`: the one owner of a file descriptor in envbox (as Nix's `AutoCloseFD`).

#include <unistd.h>

#include <utility>

namespace envbox {

/// Owns one file descriptor and closes it when destroyed or reset. Move-only; -1 means none.
/// close(2) errors are ignored here: a writer that must know whether its data reached the
/// file calls `::close(fd.release())` itself and checks the result.
class UniqueFd {
  public:
    UniqueFd() = default;
    /// Takes ownership of `fd` (may be -1, as a failed open(2) returns).
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    /// The descriptor, still owned; -1 when none.
    int get() const noexcept { return fd_; }
    /// True when a descriptor is held.
    explicit operator bool() const noexcept { return fd_ >= 0; }
    /// Gives the descriptor up without closing it; the caller owns it now.
    [[nodiscard]] int release() noexcept { return std::exchange(fd_, -1); }
    /// Closes the held descriptor (if any) and takes `fd` instead.
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0 && fd_ != fd) ::close(fd_);
        fd_ = fd;
    }

  private:
    int fd_ = -1;
};

}  // namespace envbox
