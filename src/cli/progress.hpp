#pragma once
// Rendering ops::Progress: a single redrawn status line on a terminal, nothing but notes
// (with -v) elsewhere, so CI logs stay readable.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "envbox/ops/context.hpp"

namespace envbox::cli {

class ConsoleProgress final : public ops::Progress {
  public:
    ConsoleProgress(int verbosity, bool tty);
    ~ConsoleProgress() override;
    void phase(const std::string& name, std::uint64_t total) override;
    void advance(std::uint64_t n) override;
    void note(const std::string& line) override;
    void trace(const std::string& line) override;
    void download_total(std::uint64_t total) override;
    void downloaded(std::uint64_t n) override;
    /// Clears the status line (before a summary is printed).
    void clear();

  private:
    void draw(bool force);
    std::mutex mutex_;
    int verbosity_;
    bool tty_;
    bool drawn_ = false;
    std::string phase_;
    std::uint64_t total_ = 0, done_ = 0;
    std::uint64_t bytes_total_ = 0, bytes_done_ = 0;
    std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace envbox::cli
