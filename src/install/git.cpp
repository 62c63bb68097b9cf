// Git sources (install/git.hpp): the system's git, run with a fixed set of options over a bare
// repository per URL in the home's cache.
#include "envbox/install/git.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/own_tree.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/sha256.hpp"
#include "envbox/util/unique_fd.hpp"

namespace fs = std::filesystem;

namespace envbox::install {
namespace {

constexpr std::size_t kMaxOut = 16u << 20;

struct GitRun {
    int status = -1;
    std::string out, err;
};

// git's environment: the caller's chosen variables, no prompt, no system configuration, and
// the credentials as a header (GIT_CONFIG_*: never an argument another user could read).
std::vector<std::string> git_env(const GitAccess& a) {
    std::vector<std::string> env = a.env;
    env.push_back("GIT_TERMINAL_PROMPT=0");
    env.push_back("GIT_CONFIG_NOSYSTEM=1");
    env.push_back("LC_ALL=C");
    if ((a.username || a.password) && !a.credential_url.empty()) {
        env.push_back("GIT_CONFIG_COUNT=1");
        env.push_back("GIT_CONFIG_KEY_0=http." + a.credential_url + ".extraHeader");
        env.push_back("GIT_CONFIG_VALUE_0=Authorization: Basic " +
                      to_base64(a.username.value_or("") + ":" + a.password.value_or("")));
    }
    return env;
}

// Reads git's stdout (bounded) and stderr's tail until both close or `timeout` passes (then
// its process group is killed), and waits for it.
GitRun collect(pid_t pid, UniqueFd out, UniqueFd err, std::chrono::seconds timeout) {
    GitRun r;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    UniqueFd* fds[2] = {&out, &err};
    char chunk[65536];
    while (out || err) {
        pollfd p[2] = {{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        if (::poll(p, 2, static_cast<int>(std::min<long>(left.count(), 1000))) < 0 &&
            errno != EINTR)
            break;
        for (int i = 0; i < 2; ++i) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            const ssize_t n = ::read(p[i].fd, chunk, sizeof chunk);
            if (n <= 0) {
                fds[i]->reset();
                continue;
            }
            std::string& into = i == 0 ? r.out : r.err;
            into.append(chunk, static_cast<std::size_t>(n));
            if (i == 1 && into.size() > 8192) into.erase(0, into.size() - 4096);
            if (i == 0 && into.size() > kMaxOut) {
                r.err += "\n(envbox: git's output is over 16 MiB)";
                out.reset();
                err.reset();
                break;  // p[1].fd is closed now: never read again
            }
        }
    }
    if (out || err || r.out.size() > kMaxOut) {
        ::kill(-pid, SIGKILL);
        if (r.out.size() <= kMaxOut)
            r.err += "\n(envbox: git was stopped after " + std::to_string(timeout.count()) + " s)";
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r.out.size() > kMaxOut) r.status = 1;
    if (r.status == 127 && r.err.empty()) r.err = "git is not installed (/usr/bin/git)";
    return r;
}

// Runs `git` with `args` after envbox's fixed options (no hooks, only the transports a source
// may name), in a process group of its own that Ctrl-C ends with envbox.
GitRun run_git(const GitAccess& a, const std::vector<std::string>& args) {
    static const std::vector<std::string> kFixed = {"git",
                                                    "-c",
                                                    "core.hooksPath=/dev/null",
                                                    "-c",
                                                    "protocol.allow=never",
                                                    "-c",
                                                    "protocol.https.allow=always",
                                                    "-c",
                                                    "protocol.http.allow=always",
                                                    "-c",
                                                    "protocol.ssh.allow=always",
                                                    "-c",
                                                    "protocol.file.allow=always",
                                                    "-c",
                                                    "core.fsmonitor=false"};
    std::vector<std::string> argv = kFixed;
    argv.insert(argv.end(), args.begin(), args.end());
    const std::vector<std::string> env = git_env(a);
    std::vector<char*> cargv, cenv;
    for (const auto& s : argv)
        cargv.push_back(const_cast<char*>(s.c_str()));
    for (const auto& s : env)
        cenv.push_back(const_cast<char*>(s.c_str()));
    cargv.push_back(nullptr);
    cenv.push_back(nullptr);
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
        throw Error(ErrorCode::generic, std::string("pipe: ") + std::strerror(errno));
    UniqueFd out_r(out[0]), out_w(out[1]), err_r(err[0]), err_w(err[1]);
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(ErrorCode::generic, std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {  // only async-signal-safe calls from here
        ::setpgid(0, 0);
        const int null = ::open("/dev/null", O_RDONLY);
        ::dup2(null, 0);
        ::dup2(out_w.get(), 1);
        ::dup2(err_w.get(), 2);
        for (const char* git : {"/usr/bin/git", "/usr/local/bin/git", "/bin/git"})
            ::execve(git, cargv.data(), cenv.data());
        ::_exit(127);
    }
    ::setpgid(pid, pid);  // before the interrupt handler may kill its group
    const InterruptGroup interrupt(pid);
    out_w.reset();
    err_w.reset();
    return collect(pid, std::move(out_r), std::move(err_r), a.timeout);
}

// The last non-empty line git wrote to stderr, for an error.
std::string last_words(const GitRun& r) {
    std::string e = r.err;
    while (!e.empty() && (e.back() == '\n' || e.back() == '\r'))
        e.pop_back();
    const auto nl = e.rfind('\n');
    return nl == std::string::npos ? e : e.substr(nl + 1);
}

std::string redacted(const std::string& url) {
    const auto scheme = url.find("://");
    const auto at = url.find('@', scheme == std::string::npos ? 0 : scheme + 3);
    const auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
    if (scheme == std::string::npos || at == std::string::npos || at > slash) return url;
    return url.substr(0, scheme + 3) + "***@" + url.substr(at + 1);
}

// The cache's bare repository for `url`, made when missing, held for the caller's work.
struct Repo {
    fs::path dir;
    FileLock held;
};

Repo open_repo(const GitAccess& a, const std::string& url) {
    // cache/git is envbox's own folder: never made or entered through a link planted there.
    make_own_dir_at_path(a.cache.parent_path().parent_path(), a.cache);
    const std::string key = to_hex(sha256(url)).substr(0, 32);
    Repo repo{a.cache / key, FileLock(a.cache / (key + ".lock"))};
    std::error_code ec;
    const bool planted = fs::is_symlink(fs::symlink_status(repo.dir, ec));
    if (planted || !fs::is_regular_file(fs::symlink_status(repo.dir / "HEAD", ec))) {
        remove_own_tree(a.cache, repo.dir);  // a link is removed itself, never followed
        const GitRun r =
            run_git(a, {"init", "--quiet", "--bare", "--template=", repo.dir.string()});
        if (r.status != 0)
            throw Error(ErrorCode::generic, "git init " + repo.dir.string() + ": " + last_words(r));
    }
    return repo;
}

bool has_commit(const GitAccess& a, const Repo& repo, const std::string& commit) {
    return run_git(a, {"--git-dir", repo.dir.string(), "cat-file", "-e", commit + "^{commit}"})
               .status == 0;
}

// Fetches every branch and tag of the remote into refs of envbox's own.
GitRun fetch_all(const GitAccess& a, const Repo& repo, const std::string& url) {
    return run_git(
        a, {"--git-dir", repo.dir.string(), "fetch", "--quiet", "--no-tags", "--force", "--", url,
            "+refs/heads/*:refs/envbox-heads/*", "+refs/tags/*:refs/envbox-tags/*"});
}

void keep(const GitAccess& a, const Repo& repo, const std::string& commit) {
    run_git(a, {"--git-dir", repo.dir.string(), "update-ref", "refs/envbox/" + commit, commit});
}

void ensure_commit(const GitAccess& a, const Repo& repo, const std::string& url,
                   const std::string& commit) {
    if (has_commit(a, repo, commit)) return;
    if (a.offline)
        throw Error(ErrorCode::network, "--offline: commit " + commit + " of " + redacted(url) +
                                            " is not in envbox's git cache");
    GitRun r = run_git(
        a, {"--git-dir", repo.dir.string(), "fetch", "--quiet", "--no-tags", "--", url, commit});
    if (r.status != 0 || !has_commit(a, repo, commit)) r = fetch_all(a, repo, url);
    if (!has_commit(a, repo, commit))
        throw Error(ErrorCode::network,
                    "the commit " + commit + " is not in " + redacted(url) +
                        (r.status != 0 ? " (git: " + last_words(r) + ")"
                                       : ": no branch or tag of it reaches that commit now "
                                         "(was it force-pushed away?); lock again to pin one "
                                         "that exists"));
    keep(a, repo, commit);
}

}  // namespace

std::optional<std::string> vcs_problem(const std::string& type, const std::string& url,
                                       const std::string& commit,
                                       const std::optional<std::string>& subdirectory) {
    if (type != "git") return "type '" + type + "' is not git";
    bool scheme = false;
    for (const char* s : {"https://", "http://", "ssh://", "file://"})
        scheme = scheme || url.starts_with(s);
    if (!scheme) return "url is not an https, http, ssh or file URL";
    const std::string rest = url.substr(url.find("://") + 3);
    const std::string authority = rest.substr(0, rest.find('/'));
    if (authority.find(':') != std::string::npos && authority.find('@') != std::string::npos &&
        authority.find(':') < authority.find('@'))
        return "url carries a password";
    if (std::any_of(url.begin(), url.end(),
                    [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }))
        return "url holds a blank or a control character";
    if (!is_commit_id(commit)) return "commit-id is not a full commit id";
    if (subdirectory &&
        (subdirectory->empty() || subdirectory->front() == '/' || subdirectory->front() == '-' ||
         ("/" + *subdirectory + "/").find("/../") != std::string::npos))
        return "subdirectory is not a folder inside the repository";
    return std::nullopt;
}

std::string git_tree_state(const GitAccess& a, const fs::path& dir, const fs::path& skip) {
    const GitRun head = run_git(a, {"-C", dir.string(), "rev-parse", "--verify", "HEAD"});
    const std::string commit = head.out.substr(0, head.out.find('\n'));
    if (head.status != 0 || !is_commit_id(commit)) return "commit unknown";
    std::vector<std::string> args = {"-C", dir.string(), "status", "--porcelain", "--", "."};
    const std::string rel = skip.lexically_relative(dir).generic_string();
    if (!skip.empty() && !rel.empty() && !rel.starts_with(".."))  // only a folder of the tree
        args.push_back(":(exclude)" + skip.string());
    const GitRun status = run_git(a, args);
    if (status.status != 0) return "commit " + commit + " dirty";  // unknown: as changed
    return "commit " + commit + (status.out.empty() ? " clean" : " dirty");
}

std::string git_variable_name(const std::string& name, const std::string& field) {
    std::string out = "ENVBOX_GIT_";
    for (char c : name)
        out += std::isalnum(static_cast<unsigned char>(c))
                   ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                   : '_';
    return out + "_" + field;
}

GitAccess GitSettings::access(const std::string& name, bool offline,
                              const std::string& credential_url) const {
    GitAccess a;
    a.credential_url = credential_url;
    a.cache = cache;
    a.env = env;
    a.offline = offline;
    for (const auto& [field, into] :
         {std::pair{"USERNAME", &a.username}, {"PASSWORD", &a.password}})
        if (auto it = variables.find(git_variable_name(name, field)); it != variables.end())
            *into = it->second;
    return a;
}

bool is_commit_id(const std::string& s) {
    return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string git_resolve(const GitAccess& a, const std::string& url,
                        const std::optional<std::string>& rev) {
    const Repo repo = open_repo(a, url);
    if (rev && is_commit_id(*rev)) {
        ensure_commit(a, repo, url, *rev);
        return *rev;
    }
    if (a.offline)
        throw Error(ErrorCode::network, "--offline: " + redacted(url) + " '" +
                                            rev.value_or("HEAD") +
                                            "' is resolved by asking the remote");
    const GitRun r = run_git(a, {"--git-dir", repo.dir.string(), "fetch", "--quiet", "--no-tags",
                                 "--force", "--", url, rev.value_or("HEAD")});
    if (r.status != 0)
        throw Error(ErrorCode::network, "git could not fetch '" + rev.value_or("HEAD") + "' of " +
                                            redacted(url) + ": " + last_words(r));
    const GitRun head = run_git(
        a, {"--git-dir", repo.dir.string(), "rev-parse", "--verify", "FETCH_HEAD^{commit}"});
    std::string commit = head.out.substr(0, head.out.find('\n'));
    if (head.status != 0 || !is_commit_id(commit))
        throw Error(ErrorCode::network,
                    redacted(url) + " '" + rev.value_or("HEAD") + "' names no commit");
    keep(a, repo, commit);
    return commit;
}

std::optional<std::string> git_file(const GitAccess& a, const std::string& url,
                                    const std::string& commit, const std::string& path) {
    const Repo repo = open_repo(a, url);
    ensure_commit(a, repo, url, commit);
    const std::string object = commit + ":" + path;
    const GitRun size = run_git(a, {"--git-dir", repo.dir.string(), "cat-file", "-s", object});
    if (size.status != 0) return std::nullopt;
    if (std::stoull("0" + size.out.substr(0, size.out.find('\n'))) > kMaxInputFileBytes)
        throw Error(ErrorCode::invalid_input, redacted(url) + " " + object + " is over 16 MiB");
    const GitRun text = run_git(a, {"--git-dir", repo.dir.string(), "cat-file", "blob", object});
    if (text.status != 0) return std::nullopt;
    return text.out;
}

void git_archive(const GitAccess& a, const std::string& url, const std::string& commit,
                 const std::optional<std::string>& subdirectory, const std::string& prefix,
                 const fs::path& out) {
    const Repo repo = open_repo(a, url);
    ensure_commit(a, repo, url, commit);
    const std::string tree = subdirectory ? commit + ":" + *subdirectory : commit;
    const GitRun r = run_git(a, {"--git-dir", repo.dir.string(), "archive", "--format=tar.gz",
                                 "--prefix=" + prefix + "/", "-o", out.string(), tree});
    if (r.status != 0)
        throw Error(ErrorCode::invalid_input,
                    "git archive of " + redacted(url) + " " + tree + ": " + last_words(r));
}

}  // namespace envbox::install
