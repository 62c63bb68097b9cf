#pragma once
/// How long work reports on itself: an observer every layer that does long work takes by
/// reference. The cli renders it (a bar on a TTY, nothing in CI); no layer below prints.

#include <cstdint>
#include <string>

namespace envbox {

/// Progress events of long operations. The default of each event is to ignore it.
class Progress {
  public:
    virtual ~Progress() = default;
    /// A new phase ("Fetching", "Installing") with `total` units (0 when unknown).
    virtual void phase(const std::string& name, std::uint64_t total) { (void)name, (void)total; }
    /// `n` more units of the current phase are done.
    virtual void advance(std::uint64_t n) { (void)n; }
    /// Bytes downloaded during the current phase, beside its units: `total` (0 when unknown)
    /// sets the expected sum, `n` adds what arrived. Called from any thread.
    virtual void download_total(std::uint64_t total) { (void)total; }
    virtual void downloaded(std::uint64_t n) { (void)n; }
    /// A line worth showing (fallbacks, waits); shown with -v or when it matters.
    virtual void note(const std::string& line) { (void)line; }
    /// A line of a trace the user asked for (ENVBOX_RESOLVE_DEBUG: the solver's conflicts),
    /// shown as it is, whatever the verbosity. Called from the thread doing the work.
    virtual void trace(const std::string& line) { (void)line; }
};

}  // namespace envbox
