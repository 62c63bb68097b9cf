// Check records on disk (check_record.hpp): beside the generations, never through a link.
#include "envbox/env/check_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "envbox/env/generation.hpp"
#include "envbox/env/known_good.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/own_tree.hpp"

namespace fs = std::filesystem;

namespace envbox::env {
namespace {

constexpr const char* kChecks = "checks";
// A record holds a line per module; far above what one needs.
constexpr std::size_t kMaxRecordBytes = 16u << 20;

// `env_dir/checks`, each folder opened as envbox's own (the environment's folder too).
UniqueFd open_checks(const fs::path& env_dir, bool make) {
    const fs::path rel = env_dir.filename() / kChecks;
    return make ? make_own_dir(env_dir.parent_path(), rel)
                : open_own_dir(env_dir.parent_path(), rel);
}

}  // namespace

fs::path check_record_path(const fs::path& env_dir, int generation) {
    return env_dir / kChecks / generation_dir_name(generation);
}

void write_check_record(const fs::path& env_dir, const CheckRecord& record) {
    UniqueFd dir = open_checks(env_dir, true);
    replace_own_file(dir.get(), check_record_path(env_dir, record.generation),
                     check_record_text(record));
}

namespace {

// Generation N's record in the open `checks` folder `dir`.
std::optional<CheckRecord> read_record_in(int dir, const fs::path& env_dir, int generation) {
    const fs::path path = check_record_path(env_dir, generation);
    const auto text = read_own_file(dir, path, kMaxRecordBytes);
    if (!text) return std::nullopt;
    CheckRecord out = parse_check(*text, path.string(), /*probe=*/false);
    if (out.generation != generation)
        throw Error(ErrorCode::integrity, path.string() + ": the record of generation " +
                                              std::to_string(out.generation) + ", not " +
                                              std::to_string(generation));
    return out;
}

}  // namespace

std::optional<CheckRecord> read_check_record(const fs::path& env_dir, int generation) {
    UniqueFd dir = open_checks(env_dir, false);
    if (!dir) return std::nullopt;
    return read_record_in(dir.get(), env_dir, generation);
}

std::vector<CheckRecord> read_check_records(const fs::path& env_dir,
                                            std::vector<std::string>* damaged) {
    std::vector<CheckRecord> out;
    UniqueFd dir = open_checks(env_dir, false);
    if (!dir) return out;
    std::vector<int> numbers;
    for (const auto& e : list_own_dir(dir.get(), env_dir / kChecks))
        if (e.name.starts_with("gen-"))
            if (auto n = parse_generation_number(std::string_view(e.name).substr(4)))
                numbers.push_back(*n);
    std::sort(numbers.begin(), numbers.end());
    for (int n : numbers) {
        try {
            if (auto c = read_record_in(dir.get(), env_dir, n)) out.push_back(std::move(*c));
        } catch (const Error& e) {
            if (damaged) damaged->push_back(e.what());
        }
    }
    return out;
}

void remove_check_record(const fs::path& env_dir, int generation) {
    UniqueFd dir = open_checks(env_dir, false);
    if (!dir) return;
    const std::string name = generation_dir_name(generation);
    if (::unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT)
        throw sys_error("cannot remove " + check_record_path(env_dir, generation).string(), errno);
}

}  // namespace envbox::env
