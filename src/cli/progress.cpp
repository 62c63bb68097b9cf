#include "cli/progress.hpp"

#include <cstdio>

#include "cli/commands.hpp"

namespace envbox::cli {

ConsoleProgress::ConsoleProgress(int verbosity, bool tty) : verbosity_(verbosity), tty_(tty) {}

ConsoleProgress::~ConsoleProgress() {
    clear();
}

void ConsoleProgress::phase(const std::string& name, std::uint64_t total) {
    std::lock_guard lock(mutex_);
    phase_ = name;
    total_ = total;
    done_ = 0;
    bytes_total_ = bytes_done_ = 0;
    if (verbosity_ > 0 && !tty_)
        std::fprintf(stderr, "%s (%llu)\n", name.c_str(), static_cast<unsigned long long>(total));
    draw(true);
}

void ConsoleProgress::advance(std::uint64_t n) {
    std::lock_guard lock(mutex_);
    done_ += n;
    draw(done_ == total_);
}

void ConsoleProgress::download_total(std::uint64_t total) {
    std::lock_guard lock(mutex_);
    bytes_total_ = total;
}

void ConsoleProgress::downloaded(std::uint64_t n) {
    std::lock_guard lock(mutex_);
    bytes_done_ += n;
    draw(false);
}

void ConsoleProgress::note(const std::string& line) {
    std::lock_guard lock(mutex_);
    if (verbosity_ < 0) return;
    if (drawn_) std::fputs("\r\033[2K", stderr);
    drawn_ = false;
    std::fprintf(stderr, "note: %s\n", line.c_str());
    draw(true);
}

void ConsoleProgress::trace(const std::string& line) {
    std::lock_guard lock(mutex_);
    if (drawn_) std::fputs("\r\033[2K", stderr);
    drawn_ = false;
    std::fprintf(stderr, "%s\n", line.c_str());
    draw(true);
}

void ConsoleProgress::clear() {
    std::lock_guard lock(mutex_);
    if (drawn_) std::fputs("\r\033[2K", stderr);
    drawn_ = false;
}

void ConsoleProgress::draw(bool force) {
    if (!tty_ || verbosity_ < 0 || phase_.empty()) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now - last_draw_ < std::chrono::milliseconds(80)) return;
    last_draw_ = now;
    if (total_ > 0) {
        int width = 24;
        int filled =
            static_cast<int>(static_cast<double>(done_) / static_cast<double>(total_) * width);
        std::string bar(static_cast<std::size_t>(filled), '=');
        bar.resize(static_cast<std::size_t>(width), ' ');
        std::string bytes;
        if (bytes_done_ > 0)
            bytes = ", " + human_bytes(bytes_done_) +
                    (bytes_total_ ? " of " + human_bytes(bytes_total_) : "") + " downloaded";
        std::fprintf(stderr, "\r\033[2K%s [%s] %llu/%llu%s", phase_.c_str(), bar.c_str(),
                     static_cast<unsigned long long>(done_),
                     static_cast<unsigned long long>(total_), bytes.c_str());
    } else {
        std::fprintf(stderr, "\r\033[2K%s…", phase_.c_str());
    }
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace envbox::cli
