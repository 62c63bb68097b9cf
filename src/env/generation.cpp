#include "envbox/env/generation.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

constexpr std::string_view kInfoHeader = "envbox-generation 1";

std::optional<int> parse_gen_number(const std::string& name) {
    if (!name.starts_with("gen-") || name.size() == 4 || name.size() > 13) return std::nullopt;
    int n = 0;
    for (char c : name.substr(4)) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    return n;
}

}  // namespace

std::string generation_dir_name(int number) { return "gen-" + std::to_string(number); }

std::optional<Generation> read_generation(const fs::path& gen_path) {
    auto number = parse_gen_number(gen_path.filename().string());
    if (!number) return std::nullopt;
    Generation g;
    g.number = *number;
    g.path = gen_path;
    std::error_code ec;
    g.complete = fs::exists(gen_path / ".envbox" / "complete", ec);
    fs::path info = gen_path / ".envbox" / "info";
    if (!fs::exists(info, ec)) return g;
    std::istringstream s(read_file(info));
    std::string line;
    if (!std::getline(s, line) || line != kInfoHeader) return g;
    while (std::getline(s, line)) {
        auto sp = line.find(' ');
        if (sp == std::string::npos) continue;
        std::string key = line.substr(0, sp), value = line.substr(sp + 1);
        if (key == "created") g.created = value;
        else if (key == "lock-digest") g.lock_digest = value;
        else if (key == "lock-source") g.lock_source = value;
        else if (key == "python") g.python = value;
        else if (key == "python-version") g.python_version = value;
        else if (key == "platform") g.platform = value;
        else if (key == "environment") g.environment = value;
        else if (key == "link-mode") g.link_mode = value;
        else if (key == "direct-url") {
            auto sp2 = value.find(' ');
            for (auto& p : g.packages)
                if (sp2 != std::string::npos && p.name == value.substr(0, sp2)) p.direct_url = value.substr(sp2 + 1);
        }
        else if (key == "prefer") {
            for (auto& p : g.packages)
                if (p.name == value) p.preferred = true;
        }
        else if (key == "package") {
            std::istringstream f(value);
            GenerationPackage p;
            std::string requested;
            f >> p.name >> p.version >> p.wheel_sha256 >> p.filename >> requested;
            p.requested = requested == "requested";
            g.packages.push_back(std::move(p));
        }
    }
    return g;
}

std::vector<Generation> list_generations(const fs::path& env_dir) {
    std::vector<Generation> out;
    std::error_code ec;
    if (!fs::is_directory(env_dir, ec)) return out;
    for (const auto& e : fs::directory_iterator(env_dir, ec)) {
        if (!e.is_directory(ec) || e.is_symlink(ec)) continue;
        if (auto g = read_generation(e.path())) out.push_back(std::move(*g));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.number < b.number; });
    return out;
}

std::optional<Generation> current_generation(const fs::path& env_dir) {
    std::error_code ec;
    fs::path target = fs::read_symlink(env_dir / "current", ec);
    if (ec) return std::nullopt;
    auto g = read_generation(env_dir / target.filename());
    if (!g || !g->complete) return std::nullopt;
    return g;
}

void write_generation_record(const Generation& g, const std::string& lock_text) {
    fs::path dir = g.path / ".envbox";
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot create " + dir.string() + ": " + ec.message());
    std::ostringstream s;
    s << kInfoHeader << "\n"
      << "generation " << g.number << "\n"
      << "created " << g.created << "\n"
      << "lock-digest " << g.lock_digest << "\n"
      << "lock-source " << g.lock_source << "\n"
      << "python " << g.python << "\n"
      << "python-version " << g.python_version << "\n"
      << "platform " << g.platform << "\n"
      << "environment " << g.environment << "\n"
      << "link-mode " << g.link_mode << "\n";
    for (const auto& p : g.packages)
        s << "package " << p.name << " " << p.version << " " << p.wheel_sha256 << " " << p.filename << " "
          << (p.requested ? "requested" : "-") << "\n";
    for (const auto& p : g.packages)
        if (!p.direct_url.empty()) s << "direct-url " << p.name << " " << p.direct_url << "\n";
    for (const auto& p : g.packages)
        if (p.preferred) s << "prefer " << p.name << "\n";
    write_file_atomic(dir / "info", s.str(), 0444, Durability::none);
    write_file_atomic(dir / "pylock.toml", lock_text, 0444, Durability::none);
}

void stamp_complete(const fs::path& gen_path) {
    sync_filesystem(gen_path);
    write_file_atomic(gen_path / ".envbox" / "complete", "complete\n", 0444, Durability::fsync);
}

void switch_current(const fs::path& env_dir, int number) {
    fs::path tmp = env_dir / (".current.tmp." + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove(tmp, ec);
    fs::create_symlink(generation_dir_name(number), tmp, ec);
    if (ec) throw Error(ErrorCode::generic, "cannot create " + tmp.string() + ": " + ec.message());
    if (::rename(tmp.c_str(), (env_dir / "current").c_str()) != 0) {
        int err = errno;
        fs::remove(tmp, ec);
        throw Error(ErrorCode::generic, "cannot switch " + (env_dir / "current").string() + ": " +
                                            std::strerror(err));
    }
    int fd = ::open(env_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

}  // namespace envbox::env
