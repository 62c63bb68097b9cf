#pragma once
/// Known-good generations (docs/ARCHITECTURE.md, "Environments and generations"): the pins
/// and the event log of one environment. Generation directories are sealed read-only once
/// complete, so this mutable state lives beside them, in the environment's folder:
///
///   envs/<project key>/<ENV>/pins     "envbox-pins 1", then `pin N WHEN` per pinned generation
///   envs/<project key>/<ENV>/events   "envbox-events 1", then `KIND WHEN N [M]` per event,
///                                     oldest first: `rollback WHEN 5 4`, `pin WHEN 1`,
///                                     `unpin WHEN 1`
///
/// Both lie inside the home: they are opened relative to the environment's folder with
/// `O_NOFOLLOW`, and a symbolic link where either goes is refused (exit 5, the link rule of
/// docs/SECURITY.md), never read or written through. `pins` is replaced whole (a temporary file
/// and one rename); `events` is appended to, one line per event, and once it passes
/// `kEventLogTrimBytes` it is rewritten (atomically) with only its newest lines. Both are read
/// with bounds: a file larger than envbox ever writes, an unknown header, or a malformed line is
/// an `Error` (integrity, exit 5) naming the file (and the line). Callers hold the environment's
/// lock (ops::env_lock_path) while they change either.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envbox/util/unique_fd.hpp"

namespace envbox::env {

/// A generation number as envbox writes one: 1 to 9 digits, not 0; nullopt otherwise.
std::optional<int> parse_generation_number(std::string_view s);

/// A time as envbox writes one ("2025-01-31T12:00:00Z"): digits, '-', ':', 'T' and 'Z', at most
/// 32 characters.
bool valid_timestamp(std::string_view s);

/// `env_dir/pins`, `env_dir/events`.
std::filesystem::path pins_path(const std::filesystem::path& env_dir);
std::filesystem::path events_path(const std::filesystem::path& env_dir);

/// One pinned generation: its number and when it was pinned (UTC, ISO 8601).
struct Pin {
    int number = 0;
    std::string when;
};

/// ENV's pins, by number; empty when the environment or its `pins` file does not exist.
/// Throws (integrity) for a link planted there or hostile content, naming the file.
std::vector<Pin> read_pins(const std::filesystem::path& env_dir);

/// Replaces ENV's `pins` with `pins` (a temporary file, then one rename; a header only when
/// none is left). The environment's folder must exist. Refuses a link planted there.
void write_pins(const std::filesystem::path& env_dir, const std::vector<Pin>& pins);

/// One line of the event log.
struct GenerationEvent {
    std::string when;  ///< UTC, ISO 8601
    std::string kind;  ///< "rollback", "pin" or "unpin"
    int from = 0;      ///< rollback: the generation that was current; pin/unpin: 0
    int to = 0;        ///< rollback: the generation made current; pin/unpin: the generation

    /// "rollback 5 → 4", "pin 1", "unpin 1".
    std::string describe() const;
};

/// ENV's events, oldest first; empty when it has no log. Lines of a kind this envbox does not
/// know (a newer envbox's) are skipped; anything else malformed throws (integrity) naming the
/// file and line, as does a link planted there.
std::vector<GenerationEvent> read_events(const std::filesystem::path& env_dir);

/// The log is rewritten with its newest lines (about half of this) once it is larger.
constexpr std::size_t kEventLogTrimBytes = 64u << 10;

/// ENV's event log, opened for appending (created when missing) before the operation it
/// records, so that a link planted there is refused before anything changes.
class EventLog {
  public:
    /// Opens `env_dir/events` (`O_APPEND|O_NOFOLLOW`); the folder must exist. Throws
    /// `refuse_planted_link` for a link, a system `Error` naming the file otherwise.
    explicit EventLog(const std::filesystem::path& env_dir);
    /// Appends one line (the header first into an empty log); trims a log grown past
    /// `kEventLogTrimBytes`.
    void append(const GenerationEvent& event);

  private:
    std::filesystem::path env_dir_;
    UniqueFd dir_, file_;
};

/// The time now, UTC, ISO 8601 ("2025-01-31T12:00:00Z"): an event's `when`.
std::string utc_timestamp();

}  // namespace envbox::env
