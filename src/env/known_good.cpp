#include "envbox/env/known_good.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <optional>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/kv.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

constexpr std::string_view kPinsHeader = "envbox-pins 1";
constexpr std::string_view kEventsHeader = "envbox-events 1";
constexpr const char* kPins = "pins";
constexpr const char* kEvents = "events";
// Far above what envbox writes (a pin per generation; a log trimmed at 64 KiB), far below what
// would cost anything to read.
constexpr std::size_t kMaxPinsBytes = 1u << 20;
constexpr std::size_t kMaxEventsBytes = 4u << 20;
constexpr kv::Limits kLineLimits{.max_line_bytes = 256, .max_lines = 1u << 17};

UniqueFd open_env_dir(const fs::path& env_dir) {
    return open_own_dir(env_dir.parent_path(), env_dir.filename());
}

}  // namespace

std::optional<int> parse_generation_number(std::string_view s) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    int n = 0;
    for (char c : s)
        n = n * 10 + (c - '0');
    if (n == 0) return std::nullopt;
    return n;
}

bool valid_timestamp(std::string_view s) {
    return !s.empty() && s.size() <= 32 &&
           s.find_first_not_of("0123456789-:TZ") == std::string_view::npos;
}

fs::path pins_path(const fs::path& env_dir) {
    return env_dir / kPins;
}

fs::path events_path(const fs::path& env_dir) {
    return env_dir / kEvents;
}

std::string utc_timestamp() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::vector<Pin> read_pins(const fs::path& env_dir) {
    std::vector<Pin> out;
    UniqueFd dir = open_env_dir(env_dir);
    if (!dir) return out;
    const fs::path path = pins_path(env_dir);
    auto text = read_own_file(dir.get(), path, kMaxPinsBytes);
    if (!text || text->empty()) return out;
    kv::Reader r(*text, path.string(), ' ', kLineLimits);
    auto head = r.next();
    if (!head || head->text != kPinsHeader)
        throw r.error("not an envbox pins file (expected the header '" + std::string(kPinsHeader) +
                      "'); remove it and pin again (`envbox pin ENV N`)");
    while (auto l = r.next()) {
        auto f = kv::split_fields(l->value);
        std::optional<int> n;
        if (!l->has_separator || l->key != "pin" || f.size() != 2 ||
            !(n = parse_generation_number(f[0])) || !valid_timestamp(f[1]))
            throw r.error("malformed pin line; remove the file and pin again (`envbox pin ENV N`)");
        if (std::none_of(out.begin(), out.end(), [&](const Pin& p) { return p.number == *n; }))
            out.push_back({*n, std::string(f[1])});
    }
    std::sort(out.begin(), out.end(),
              [](const Pin& a, const Pin& b) { return a.number < b.number; });
    return out;
}

void write_pins(const fs::path& env_dir, const std::vector<Pin>& pins) {
    UniqueFd dir = open_env_dir(env_dir);
    if (!dir) throw Error(ErrorCode::generic, "no folder " + env_dir.string());
    const fs::path path = pins_path(env_dir);
    kv::Writer w(kPinsHeader, ' ', path.string());
    for (const auto& p : pins)
        w.add_fields("pin", {std::to_string(p.number), p.when});
    replace_own_file(dir.get(), path, std::move(w).take());
}

std::string GenerationEvent::describe() const {
    if (kind == "rollback") return "rollback " + std::to_string(from) + " → " + std::to_string(to);
    return kind + " " + std::to_string(to);
}

std::vector<GenerationEvent> read_events(const fs::path& env_dir) {
    std::vector<GenerationEvent> out;
    UniqueFd dir = open_env_dir(env_dir);
    if (!dir) return out;
    const fs::path path = events_path(env_dir);
    auto text = read_own_file(dir.get(), path, kMaxEventsBytes);
    if (!text || text->empty()) return out;
    kv::Reader r(*text, path.string(), ' ', kLineLimits);
    auto head = r.next();
    if (!head || head->text != kEventsHeader)
        throw r.error("not an envbox event log (expected the header '" +
                      std::string(kEventsHeader) + "'); remove it (history loses its events)");
    while (auto l = r.next()) {
        const std::string kind(l->key);
        auto f = kv::split_fields(l->value);
        const bool known = kind == "rollback" || kind == "pin" || kind == "unpin";
        if (!known && l->has_separator && !kind.empty() && kind.size() <= 32 &&
            kind.find_first_not_of("abcdefghijklmnopqrstuvwxyz-") == std::string::npos)
            continue;  // a newer envbox's kind of event
        const std::size_t numbers = kind == "rollback" ? 2 : 1;
        GenerationEvent e;
        std::optional<int> a, b;
        if (!known || !l->has_separator || f.size() != 1 + numbers || !valid_timestamp(f[0]) ||
            !(a = parse_generation_number(f[1])) ||
            (numbers == 2 && !(b = parse_generation_number(f[2]))))
            throw r.error("malformed event line; remove the file (history loses its events)");
        e.when = std::string(f[0]);
        e.kind = kind;
        if (numbers == 2) {
            e.from = *a;
            e.to = *b;
        } else {
            e.to = *a;
        }
        out.push_back(std::move(e));
    }
    return out;
}

EventLog::EventLog(const fs::path& env_dir) : env_dir_(env_dir) {
    dir_ = open_env_dir(env_dir);
    if (!dir_) throw Error(ErrorCode::generic, "no folder " + env_dir.string());
    struct stat st {};
    file_ = open_own_file(dir_.get(), events_path(env_dir), O_WRONLY | O_APPEND | O_CREAT, st);
}

void EventLog::append(const GenerationEvent& e) {
    const fs::path path = events_path(env_dir_);
    std::vector<std::string> fields = {e.when};
    if (e.kind == "rollback") fields.push_back(std::to_string(e.from));
    fields.push_back(std::to_string(e.to));
    kv::Writer line({}, ' ', path.string());
    line.add_fields(e.kind, std::vector<std::string_view>(fields.begin(), fields.end()));
    struct stat st {};
    if (::fstat(file_.get(), &st) != 0) throw sys_error("cannot write " + path.string(), errno);
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size + line.text().size() <= kEventLogTrimBytes) {
        const std::string text =
            (size == 0 ? std::string(kEventsHeader) + "\n" : std::string()) + line.text();
        if (!write_all_fd(file_.get(), text.data(), text.size()) || ::fsync(file_.get()) != 0)
            throw sys_error("cannot write " + path.string(), errno);
        return;
    }
    // Trim: the header, the newest whole lines of about half the limit, then the new one.
    const std::size_t keep = std::min(size, kEventLogTrimBytes / 2);
    std::string tail(keep, '\0');
    UniqueFd in(::openat(dir_.get(), kEvents, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!in && errno == ELOOP) refuse_planted_link(path, /*folder=*/false);
    if (!in) throw sys_error("cannot read " + path.string(), errno);
    ssize_t n = ::pread(in.get(), tail.data(), keep, static_cast<off_t>(size - keep));
    if (n < 0) throw sys_error("cannot read " + path.string(), errno);
    tail.resize(static_cast<std::size_t>(n));
    const auto start = tail.find('\n');
    tail = start == std::string::npos ? std::string() : tail.substr(start + 1);
    replace_own_file(dir_.get(), path, std::string(kEventsHeader) + "\n" + tail + line.text());
    file_.reset(::openat(dir_.get(), kEvents, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace envbox::env
