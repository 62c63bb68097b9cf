// install::build_wheel: envbox's PEP 517 frontend over real sdists (Python's tarfile, as
// setuptools writes them) built by Debian's setuptools and wheel wheels, in the sandbox.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "build_fixtures.hpp"
#include "envbox/install/build.hpp"
#include "envbox/util/error.hpp"
#include "envbox/util/fs.hpp"
#include "envbox/util/process.hpp"
#include "envbox/util/unique_fd.hpp"
#include "envbox/util/zip.hpp"
#include "temp_dir.hpp"

using namespace envbox;
using envboxtest::TempDir;
namespace fs = std::filesystem;

namespace {

using envboxtest::make_sdist;
using envboxtest::request;

std::string build_error(const install::BuildRequest& r) {
    try {
        install::build_wheel(r);
    } catch (const Error& e) {
        return e.message();
    }
    return "";
}

}  // namespace

TEST_CASE("build_wheel: setup.py that reads a file beside it, and a pyproject.toml backend",
          "[install][build]") {
    TempDir home;
    const fs::path legacy =
        make_sdist(home.path, "demo-1.0",
                   {{"setup.py",
                     "from setuptools import setup\n"
                     "setup(name='demo', version=open('VERSION').read().strip(),\n"
                     "      py_modules=['demo'], scripts=['bin/demo-tool'])\n"},
                    {"VERSION", "1.0\n"},
                    {"demo.py", "ANSWER = 42\n"},
                    {"bin/demo-tool", "#!python\nprint('tool')\n"}});
    const install::BuiltWheel built = install::build_wheel(request(home, legacy));
    CHECK(built.wheel.filename() == "demo-1.0-py3-none-any.whl");
    CHECK(built.build_system.legacy);
    CHECK(built.build_system.backend == "setuptools.build_meta:__legacy__");
    zip::File wheel(built.wheel.string());
    std::vector<std::string> names;
    for (const auto& m : wheel.members())
        names.push_back(m.name);
    CHECK(std::count(names.begin(), names.end(), "demo.py") == 1);
    CHECK(std::count(names.begin(), names.end(), "demo-1.0.data/scripts/demo-tool") == 1);
    CHECK(std::count(names.begin(), names.end(), "demo-1.0.dist-info/RECORD") == 1);

    const fs::path modern = make_sdist(
        home.path, "modern-2.0",
        {{"pyproject.toml",
          "[build-system]\nrequires = [\"setuptools>=40.8\", \"wheel\"]\n"
          "build-backend = \"setuptools.build_meta\"\n"},
         {"setup.cfg", "[metadata]\nname = modern\nversion = 2.0\n[options]\npackages = modern\n"},
         {"modern/__init__.py", "X = 1\n"}});
    const install::BuiltWheel m = install::build_wheel(request(home, modern));
    CHECK(m.wheel.filename() == "modern-2.0-py3-none-any.whl");
    CHECK_FALSE(m.build_system.legacy);
    CHECK(m.build_system.requires_.size() == 2);
}

TEST_CASE("build_wheel: a failing backend names the sdist and shows the log's tail",
          "[install][build]") {
    TempDir home;
    const fs::path bad =
        make_sdist(home.path, "bad-1.0",
                   {{"setup.py", "raise SystemExit('this package cannot build here')\n"}});
    const install::BuildRequest r = request(home, bad);
    const std::string e = build_error(r);
    CHECK_THAT(e, Catch::Contains("building bad-1.0.tar.gz: the backend failed (exit 1)"));
    CHECK_THAT(e, Catch::Contains("its log is " + (r.work / "build.log").string()));
    CHECK_THAT(e, Catch::Contains("this package cannot build here"));

    const fs::path slow =
        make_sdist(home.path, "slow-1.0", {{"setup.py", "import time\ntime.sleep(60)\n"}});
    install::BuildRequest s = request(home, slow);
    s.timeout = std::chrono::seconds(1);
    CHECK_THAT(build_error(s), Catch::Contains("the backend was stopped after 1 s"));

    const fs::path liar =
        make_sdist(home.path, "liar-1.0",
                   {{"pyproject.toml",
                     "[build-system]\nrequires = []\nbuild-backend = \"backend\"\n"
                     "backend-path = [\".\"]\n"},
                    {"backend.py",
                     "def build_wheel(out, config_settings=None):\n"
                     "    return '../../escape-1.0-py3-none-any.whl'\n"}});
    CHECK_THAT(build_error(request(home, liar)),
               Catch::Contains("the backend named no wheel file"));
    const fs::path outside = make_sdist(home.path, "outside-1.0",
                                        {{"pyproject.toml",
                                          "[build-system]\nrequires = []\nbuild-backend = \"b\"\n"
                                          "backend-path = [\"../..\"]\n"},
                                         {"b.py", ""}});
    const install::BuildRequest refused = request(home, outside);
    CHECK_THAT(build_error(refused),
               Catch::Contains("`backend-path` entries must be folders inside the tree"));
    // Refused before the backend ran: nothing is left of the build's folder.
    CHECK_FALSE(fs::exists(refused.work));
}

TEST_CASE("build_wheel: a hostile backend is held, as root and as a user", "[install][build]") {
    TempDir home;
    // A listening socket on the loopback of this process's network, and a UNIX socket's file
    // (an agent's) outside the home.
    UniqueFd listener(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener.get(), 1) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    const std::string port = std::to_string(ntohs(addr.sin_port));
    TempDir beside;  // outside the home: a build may not write there either
    const fs::path agent = beside.path / "agent.sock";
    UniqueFd unix_listener(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un ua{};
    ua.sun_family = AF_UNIX;
    std::snprintf(ua.sun_path, sizeof ua.sun_path, "%s", agent.c_str());
    REQUIRE(::bind(unix_listener.get(), reinterpret_cast<sockaddr*>(&ua), sizeof ua) == 0);
    REQUIRE(::listen(unix_listener.get(), 1) == 0);
    const std::string token = "envbox-outlive-" + std::to_string(::getpid());
    // Each attempt that succeeds is named, and the build then fails with those names.
    const std::string setup_py =
        "import ctypes, os, socket, subprocess, sys\n"
        "won = []\n"
        "def attempt(what, code):\n"
        "    try:\n"
        "        if code() is not False: won.append(what)\n"
        "    except OSError:\n"
        "        pass\n"
        "def tcp():\n"
        "    socket.create_connection(('127.0.0.1', " +
        port +
        "), timeout=2)\n"
        "def agent():\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    s.connect('" +
        agent.string() +
        "')\n"
        "def remount():\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    for target in (b'/', b'" +
        home.path.string() +
        "'):\n"
        "        if libc.mount(None, target, None, 32 | 4096, None) == 0: return True\n"
        "    return False\n"
        "def environ():\n"
        "    return open('/proc/" +
        std::to_string(::getpid()) +
        "/environ', 'rb').read() != b''\n"
        "def capabilities():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith(('CapEff', 'CapPrm', 'CapBnd')) and int(line.split()[1], 16):\n"
        "            return True\n"
        "    return False\n"
        "def user_namespace():\n"
        "    return ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0\n"
        "attempt('reached the network', tcp)\n"
        "attempt('connected to a UNIX socket', agent)\n"
        "attempt('wrote into the home', lambda: open('" +
        (home.path / "planted").string() +
        "', 'w'))\n"
        "attempt('wrote beside the home', lambda: open('" +
        (beside.path / "planted").string() +
        "', 'w'))\n"
        "attempt('remounted read-write', remount)\n"
        "attempt('read envbox environ', environ)\n"
        "attempt('kept a capability', capabilities)\n"
        "attempt('made a user namespace', user_namespace)\n"
        "attempt('made a vsock', lambda: socket.socket(40, socket.SOCK_STREAM))\n"
        "attempt('shares a session with envbox', lambda: os.getsid(0) != os.getpid())\n"
        "attempt('wrote /proc', lambda: open('/proc/sys/kernel/core_pattern', 'w'))\n"
        "for disk in ('/dev/sda', '/dev/vda', '/dev/nvme0n1', '/dev/mem'):\n"
        "    attempt('opened ' + disk, lambda: open(disk, 'rb'))\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', '" +
        token +
        "'], start_new_session=True)\n"
        "if won: raise SystemExit('held nothing: ' + ', '.join(won))\n"
        "from setuptools import setup\nsetup(name='probe', version='1.0', py_modules=[])\n";
    const fs::path sdist = make_sdist(home.path, "probe-1.0", {{"setup.py", setup_py}});
    const install::BuildRequest r = request(home, sdist);
    const install::BuiltWheel built = install::build_wheel(r);
    CHECK(fs::is_regular_file(built.wheel));
    CHECK_FALSE(fs::exists(home.path / "planted"));
    CHECK_FALSE(fs::exists(beside.path / "planted"));
    // The daemon it started is gone with the build.
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
        std::ifstream in(it->path() / "cmdline", std::ios::binary);
        const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
        CHECK(cmdline.find(token) == std::string::npos);
    }
}
