#pragma once
/// Seconds of wall time, for the phase timings reports carry (`create -vv`, bench/).

#include <chrono>

namespace envbox {

/// Seconds since the last `lap()` (or since construction).
class Stopwatch {
  public:
    double lap() {
        const auto now = std::chrono::steady_clock::now();
        const double s = std::chrono::duration<double>(now - last_).count();
        last_ = now;
        return s;
    }
    /// Seconds since construction, without starting a new lap.
    double total() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

  private:
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_ = start_;
};

}  // namespace envbox
