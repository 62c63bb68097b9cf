#include "cuda_guard.hpp"

#include <regex>

#include "envbox/env/generation.hpp"
#include "envbox/lock/pylock.hpp"
#include "envbox/ops/context.hpp"
#include "envbox/ops/diff.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/sha256.hpp"

namespace fs = std::filesystem;

namespace envbox::ops {

namespace {

std::string line_digits(const env::CudaLine& line) {
    return std::to_string(line.major) + std::to_string(line.minor.value_or(0));
}

const lock::IndexSpec* index_named(const std::vector<lock::IndexSpec>& indexes,
                                   const std::string& name) {
    for (const auto& i : indexes)
        if (i.name == name) return &i;
    return nullptr;
}

}  // namespace

env::CudaLine other_cuda_line(const std::optional<env::CudaLine>& current,
                              const lock::Manifest& manifest) {
    int major = current ? current->major : 0;
    if (!major && manifest.cuda) major = std::atoi(manifest.cuda->c_str());
    return major == 13 ? env::CudaLine{12, 8} : env::CudaLine{13, 0};
}

std::string separate_environment_command(const std::string& env, const lock::Manifest& manifest,
                                         const fs::path& project_root,
                                         const std::optional<env::CudaLine>& line) {
    static const std::regex label(R"(cu1[0-9]{2})");
    // init knows one line per major: the one PyTorch publishes an index for; none is CPU-only.
    const std::optional<env::CudaLine> known =
        !line ? std::nullopt
              : std::optional(line->major == 13 ? env::CudaLine{13, 0} : env::CudaLine{12, 8});
    const std::string cu = known ? "cu" + line_digits(*known) : "cpu";
    std::string name =
        std::regex_search(env, label) ? std::regex_replace(env, label, cu) : env + "-" + cu;
    if (name == env) name = env + "-new";
    std::string command = "envbox init " + name + (known ? " --cuda " + known->str() : "");
    // init's own default is PyTorch's floor, manylinux_2_28: another platform is repeated, so
    // that both environments run on the same machines.
    if (manifest.platforms.size() <= 1) {
        const auto under = manifest.platform.rfind("_x86_64") != std::string::npos    ? "x86_64"
                           : manifest.platform.rfind("_aarch64") != std::string::npos ? "aarch64"
                                                                                      : "";
        if (manifest.platform != std::string("manylinux_2_28_") + under)
            command += " --platform " + shell_word(manifest.platform);
    }
    // Indexes envbox.toml gives are the project's already: init reads them itself.
    const auto project = read_project_file(project_root);
    auto shared = [&](const std::string& index) {
        return project && index_named(project->indexes, index) != nullptr;
    };
    if (auto pypi = index_named(manifest.indexes, "pypi");
        pypi && !shared("pypi") && pypi->url != "https://pypi.org/simple")
        command += " --default-index " + shell_word(pypi->url);
    const std::string wanted = "pytorch-" + cu;
    if (!known || shared(wanted)) return command;
    std::string url;
    if (auto same = index_named(manifest.indexes, wanted)) url = same->url;
    // A mirror of another line's PyTorch index names its line in its URL: the same mirror
    // serves this one under the same shape.
    static const std::regex pytorch(R"(pytorch-cu1[0-9]{2})");
    for (const auto& i : manifest.indexes)
        if (url.empty() && std::regex_match(i.name, pytorch) && std::regex_search(i.url, label) &&
            i.url.rfind("https://download.pytorch.org/", 0) != 0)
            url = std::regex_replace(i.url, label, cu);
    if (!url.empty()) command += " --cuda-index " + shell_word(url);
    return command;
}

std::string cuda_change_refusal(const std::string& env, const std::string& change,
                                const std::optional<env::CudaLine>& after,
                                const std::string& separate, const std::string& command,
                                const fs::path& lock_path) {
    return env + ": " + change + "\nrefusing to write " + lock_path.string() + ": " + env +
           " changes its CUDA line only on purpose (every job on it would run on the new line, "
           "with new compile caches)\n"
           "keep " +
           env + " as it is and put the " +
           (after ? "CUDA " + after->str() : std::string("CPU-only")) +
           " stack in an environment of its own:\n  " + separate + "\nor, to move " + env +
           " itself: " + command + " --allow-cuda-change";
}

std::optional<env::CudaIdentity> lock_identity(const std::string& text, const fs::path& shown) {
    auto lock = lock::Pylock::parse(text, shown.string());
    if (!lock) return std::nullopt;
    std::vector<std::pair<std::string, std::string>> packages;
    for (const auto& p : lock->packages)
        if (p.version) packages.emplace_back(p.name, p.version->str());
    return env::cuda_identity(packages);
}

// Refuses a lock that moves the environment off the CUDA line of the lock it replaces (unless
// --allow-cuda-change); returns the change when allowed, for the report.
std::optional<std::string> check_cuda_line(const LockOptions& opt, const lock::Manifest& m,
                                           const std::string& before, const lock::LockDocument& doc,
                                           const fs::path& project_root,
                                           const fs::path& lock_path) {
    if (before.empty()) return std::nullopt;
    auto was = lock_identity(before, lock_path);
    if (!was) return std::nullopt;  // a lock that no longer reads: nothing to keep
    std::vector<std::pair<std::string, std::string>> now;
    for (const auto& p : doc.packages)
        now.emplace_back(p.name, p.version);
    const env::CudaIdentity after = env::cuda_identity(now);
    auto change = env::cuda_change(*was, after);
    if (!change || opt.allow_cuda_change) return change;
    throw Error(
        ErrorCode::invalid_input,
        cuda_change_refusal(opt.env, *change, after.line,
                            separate_environment_command(opt.env, m, project_root, after.line),
                            opt.retry.empty() ? "envbox lock " + opt.env : opt.retry, lock_path));
}

// A resolution that failed on a `[sources]` pin of a CUDA environment (torch from
// pytorch-cu128 while a package needs what only another line's index has): the way out
// envbox is for comes first, an environment of its own for the other line.
Error with_separate_environment_hint(const Error& e, const std::string& env,
                                     const lock::Manifest& m, const fs::path& project_root) {
    if (!m.cuda || e.message().find("[sources]") == std::string::npos) return e;
    const env::CudaLine other =
        other_cuda_line(env::CudaLine{std::atoi(m.cuda->c_str()), std::nullopt}, m);
    Error hinted(e.code(), e.message() + "\nif a package needs CUDA " + other.str() +
                               " rather than " + env + "'s " + *m.cuda +
                               ", give it an environment of its own:\n  " +
                               separate_environment_command(env, m, project_root, other));
    for (const auto& line : e.context())
        hinted.add_context(line);
    return hinted;
}

namespace {

constexpr const char* kApproved = "cuda-move";  // in the environment's folder

// The change list between two locks' texts, as `lock` prints it.
std::string change_list(const std::string& before, const std::string& after,
                        const fs::path& lock_path) {
    std::string out;
    LockView old;
    try {
        old = lock_view(before, lock_path.string());
    } catch (const Error&) {  // a generation's lock that no longer reads: every package is new
    }
    for (const auto& c : version_changes(diff(old, lock_view(after, lock_path.string()))))
        out += c.before.empty()  ? "+ " + c.name + " " + c.after + "\n"
               : c.after.empty() ? "- " + c.name + " " + c.before + "\n"
                                 : "~ " + c.name + " " + c.before + " → " + c.after + "\n";
    return out;
}

}  // namespace

void approve_cuda_move(const fs::path& home, const fs::path& edir, const std::string& lock_text) {
    // Never through a link planted in the home (the link rule, docs/SECURITY.md).
    const UniqueFd dir = make_own_dir_at_path(home, edir);
    replace_own_file(dir.get(), edir / kApproved, to_hex(sha256(lock_text)) + "\n");
}

// shape: the options, the home and environment's folder, what it would install, from which lock.
std::optional<std::string> check_cuda_move(
    const CreateOptions& opt, const fs::path& home, const fs::path& edir,
    const std::vector<std::pair<std::string, std::string>>& now, const std::string& lock_text,
    const fs::path& lock_path) {
    const auto cur = env::current_generation(edir);
    const auto before = cur ? env::read_generation_lock(cur->path) : std::nullopt;
    const auto was =
        before ? lock_identity(*before, cur->path / ".envbox" / "pylock.toml") : std::nullopt;
    if (!was) return std::nullopt;  // a new environment is not a move
    auto change = env::cuda_change(*was, env::cuda_identity(now));
    if (!change) return std::nullopt;
    const std::string gen = "generation " + std::to_string(cur->number);
    if (opt.keep_cuda_line)  // run's sync
        throw Error(ErrorCode::invalid_input,
                    opt.env + ": " + *change + " in " + lock_path.string() +
                        "\nrun does not move " + opt.env + " (" + gen +
                        ") to another CUDA line: `envbox create " + opt.env +
                        " --allow-cuda-change` does it on purpose; `envbox run --frozen " +
                        opt.env + " …` runs " + gen + " as it is");
    if (opt.allow_cuda_change) return change;
    // This machine's own `lock --allow-cuda-change` of these bytes (an own file: no link, 4 KiB).
    if (const UniqueFd dir = open_own_dir_at_path(home, edir))
        if (read_own_file(dir.get(), edir / kApproved, 4096) == to_hex(sha256(lock_text)) + "\n")
            return change;
    const std::string retry = opt.retry.empty() ? "envbox create " + opt.env : opt.retry;
    throw Error(ErrorCode::invalid_input,
                opt.env + ": ! " + *change + " in " + lock_path.string() + "\n" +
                    change_list(*before, lock_text, lock_path) + "refusing to move " + opt.env +
                    " (" + gen +
                    ") to another CUDA line: every job on it would run on the new line, with new "
                    "compile caches\nto move it on purpose: " +
                    retry + " --allow-cuda-change\nto keep it: put back the lock " + gen +
                    " was built from (`git checkout -- " + lock_path.filename().string() +
                    "` in manifests/, or `envbox diff " + opt.env + "` to review)");
}

}  // namespace envbox::ops
