// plan_install's overlap rules over wheel file lists shaped like the real ones (the CUDA 12
// namespace __init__.py, opencv-python beside opencv-python-headless), without installing.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "envbox/env/installer.hpp"
#include "envbox/store/bytecode.hpp"
#include "envbox/util/sha256.hpp"
#include "temp_dir.hpp"

using namespace envbox;
namespace fs = std::filesystem;

namespace {

struct TempHome : envboxtest::TempDir {
    TempHome() : envboxtest::TempDir("envbox-plan") {}
};

const std::string kSite = "lib/python3.12/site-packages";

// A wheel's file list as the store keeps it: `files` maps archive paths to (content, exec bit).
store::WheelFiles wheel(const std::string& name,
                        std::vector<std::tuple<std::string, std::string, bool>> files) {
    store::WheelFiles w;
    w.name = name;
    w.version = "1.0";
    std::string dist = name;
    std::replace(dist.begin(), dist.end(), '-', '_');
    w.filename = dist + "-1.0-py3-none-any.whl";
    w.wheel_sha256 = to_hex(sha256(w.filename));
    w.dist_info = dist + "-1.0.dist-info";
    w.root_is_purelib = true;
    files.emplace_back(w.dist_info + "/METADATA", "Name: " + name + "\n", false);
    files.emplace_back(w.dist_info + "/RECORD", "", false);
    for (const auto& [path, content, exec] : files)
        w.files.push_back({path, to_hex(sha256(content)), content.size(), exec});
    return w;
}

struct Planned {
    env::InstallPlan plan;
    const env::PlannedFile* file(const std::string& rel) const {
        for (const auto& f : plan.files)
            if (f.rel == kSite + "/" + rel) return &f;
        return nullptr;
    }
    std::string record(const std::string& dist_info) const {
        return file(dist_info + "/RECORD")->content;
    }
};

Planned plan(const std::vector<store::WheelFiles>& wheels, const std::vector<bool>& preferred = {},
             const std::vector<std::vector<const store::WheelBytecode*>>& bytecode = {}) {
    static TempHome home;
    static store::Store store(home.path);
    env::Interpreter in;
    in.major = 3;
    in.minor = 12;
    env::VenvLayout layout;
    layout.root = "/envs/e/gen-1";
    layout.purelib = layout.platlib = layout.root / kSite;
    layout.scripts = layout.root / "bin";
    layout.data = layout.root;
    layout.headers_base = layout.root / "include/site/python3.12";
    layout.python = layout.root / "bin/python";
    std::vector<env::InstallRequest> requests;
    for (std::size_t i = 0; i < wheels.size(); ++i) {
        env::InstallRequest r;
        r.wheel = &wheels[i];
        r.preferred = i < preferred.size() && preferred[i];
        if (i < bytecode.size()) r.bytecode = bytecode[i];
        requests.push_back(r);
    }
    return {env::plan_install(store, in, layout, requests)};
}

// A bytecode list of `w` naming `source` (a member path) as compiled from `source_content`.
store::WheelBytecode bytecode_of(const store::WheelFiles& w, const std::string& source,
                                 const std::string& source_content) {
    store::WheelBytecode b;
    b.wheel_sha256 = w.wheel_sha256;
    b.key = {"cpython-312", "cb0d0d0a", 0};
    b.sources = 1;
    const std::string pyc = "pyc of " + source;
    b.files.push_back({source, to_hex(sha256(source_content)),
                       store::WheelFile{source, to_hex(sha256(pyc)), pyc.size(), false}});
    return b;
}

std::string row(const std::string& path, const std::string& content) {
    return path + ",sha256=" + to_record_b64(sha256(content)) + "," +
           std::to_string(content.size()) + "\n";
}

}  // namespace

TEST_CASE("a path shipped with the same content and mode is placed once and in every RECORD") {
    std::vector<store::WheelFiles> w = {
        wheel("nvidia-cublas-cu12", {{"nvidia/__init__.py", "", false},
                                     {"nvidia/cublas/lib/libcublas.so.12", "elf", true}}),
        wheel("nvidia-cuda-runtime-cu12",
              {{"nvidia/__init__.py", "", false}, {"nvidia/cuda_runtime/__init__.py", "", false}}),
        wheel("nvidia-cudnn-cu12", {{"nvidia/__init__.py", "", false}}),
    };
    Planned p = plan(w);
    CHECK(std::count_if(p.plan.files.begin(), p.plan.files.end(),
                        [](const auto& f) { return f.rel == kSite + "/nvidia/__init__.py"; }) == 1);
    for (const auto& x : w)
        CHECK_THAT(
            p.record(x.dist_info),
            Catch::Contains(
                "nvidia/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n"));
    CHECK(p.plan.notes.empty());
}

TEST_CASE("[install] prefer decides a path shipped with different content") {
    const std::string gui = "FLAVOUR = 'gui'\n", headless = "FLAVOUR = 'headless'\n";
    struct Row {
        const char* what;
        std::vector<std::string> contents;  // cv2/__init__.py per wheel
        std::vector<bool> preferred;
        int placed_from;           // wheel whose file is placed
        std::vector<bool> listed;  // whose RECORD lists the path
        const char* note;
    };
    const Row rows[] = {
        {"the preferred second",
         {gui, headless},
         {false, true},
         1,
         {false, true},
         "w1 1.0 (w1-1.0-py3-none-any.whl) wins 1 path over w0 1.0 (w0-1.0-py3-none-any.whl)"},
        {"the preferred first",
         {gui, headless},
         {true, false},
         0,
         {true, false},
         "w0 1.0 (w0-1.0-py3-none-any.whl) wins"},
        {"a loser that shares the loser's content",
         {gui, headless, gui},
         {false, true, false},
         1,
         {false, true, false},
         "wins 1 path over w0 1.0 (w0-1.0-py3-none-any.whl) ([install] prefer)\n"
         "w1 1.0 (w1-1.0-py3-none-any.whl) wins 1 path over w2 1.0"},
        {"a third wheel with the winner's content",
         {gui, headless, headless},
         {false, true, false},
         1,
         {false, true, true},
         "wins 1 path over w0 1.0"},
        {"two preferred wheels that agree",
         {gui, headless, headless},
         {false, true, true},
         1,
         {false, true, true},
         "wins 1 path over w0"},
    };
    for (const auto& r : rows) {
        INFO(r.what);
        std::vector<store::WheelFiles> w;
        for (std::size_t i = 0; i < r.contents.size(); ++i)
            w.push_back(
                wheel("w" + std::to_string(i), {{"cv2/__init__.py", r.contents[i], false},
                                                {"cv2/data/cascade.xml", "<xml/>\n", false}}));
        Planned p = plan(w, r.preferred);
        const auto* f = p.file("cv2/__init__.py");
        REQUIRE(f);
        CHECK(f->wheel == static_cast<std::size_t>(r.placed_from));
        CHECK(f->object->digest == to_hex(sha256(r.contents[r.placed_from])));
        for (std::size_t i = 0; i < w.size(); ++i) {
            const std::string record = p.record(w[i].dist_info);
            CHECK((record.find("cv2/__init__.py,") != std::string::npos) == r.listed[i]);
            if (r.listed[i])
                CHECK_THAT(record,
                           Catch::Contains(row("cv2/__init__.py", r.contents[r.placed_from])));
            CHECK_THAT(record, Catch::Contains(row("cv2/data/cascade.xml", "<xml/>\n")));
        }
        std::string notes;
        for (const auto& n : p.plan.notes)
            notes += n + "\n";
        CHECK_THAT(notes, Catch::Contains(r.note));
    }
}

TEST_CASE("overlaps that are install conflicts") {
    struct Row {
        const char* what;
        std::vector<store::WheelFiles> wheels;
        std::vector<bool> preferred;
        const char* expect;
    };
    const Row rows[] = {
        {"different content, no preference",
         {wheel("opencv-python", {{"cv2/__init__.py", "gui\n", false}}),
          wheel("opencv-python-headless", {{"cv2/__init__.py", "headless\n", false}})},
         {},
         "file lib/python3.12/site-packages/cv2/__init__.py is installed by two wheels with "
         "different content: "
         "opencv-python 1.0 (opencv_python-1.0-py3-none-any.whl) and opencv-python-headless 1.0 "
         "(opencv_python_headless-1.0-py3-none-any.whl); to install one of them over the other, "
         "name it in the "
         "manifest's [install] prefer (prefer = [\"opencv-python\"])"},
        {"the same bytes, another mode",
         {wheel("a", {{"tool.sh", "echo\n", true}}), wheel("b", {{"tool.sh", "echo\n", false}})},
         {},
         "tool.sh is installed by two wheels with different modes: a 1.0"},
        {"both preferred, and they differ",
         {wheel("a", {{"x.py", "a\n", false}}), wheel("b", {{"x.py", "b\n", false}})},
         {true, true},
         "x.py is installed by two wheels with different content, and [install] prefer names both: "
         "a 1.0"},
        {"a file written into another wheel's .dist-info",
         {wheel("a", {}),
          wheel("b", {{"b-1.0.data/purelib/a-1.0.dist-info/METADATA", "Name: evil\n", false}})},
         {false, true},
         "a-1.0.dist-info/METADATA is installed by two wheels with different content: a 1.0"},
        {"a RECORD overwritten by another wheel",
         {wheel("a", {}), wheel("b", {{"b-1.0.data/purelib/a-1.0.dist-info/RECORD", "x", false}})},
         {false, true},
         "(the path is in the first one's .dist-info)"},
        {"one wheel claiming a path twice",
         {wheel("a", {{"a/m.py", "1\n", false}, {"a-1.0.data/purelib/a/m.py", "2\n", false}})},
         {true},
         "file lib/python3.12/site-packages/a/m.py is claimed by one wheel twice: a 1.0"},
        {"a file that is a directory in another wheel",
         {wheel("a", {{"shared/x", "f\n", false}}), wheel("b", {{"shared/x/y.py", "", false}})},
         {true, true},
         "lib/python3.12/site-packages/shared/x is a file in a 1.0 (a-1.0-py3-none-any.whl) and a "
         "directory"},
    };
    for (const auto& r : rows) {
        INFO(r.what);
        try {
            plan(r.wheels, r.preferred);
            FAIL("planned without an error");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::conflict);
            CHECK_THAT(e.message(), Catch::Contains(r.expect));
        }
    }
}

TEST_CASE("a .pyc is placed beside the source it was compiled from, and only there") {
    const std::vector<store::WheelFiles> w = {
        wheel("pkg", {{"pkg/__init__.py", "", false},
                      {"pkg/core.py", "X = 1\n", false},
                      {"pkg-1.0.data/purelib/extra.py", "E = 1\n", false},
                      {"pkg-1.0.data/headers/gen.py", "H = 1\n", false}})};
    SECTION("each source's .pyc in the __pycache__ beside where it lands, not in RECORD") {
        const store::WheelBytecode core = bytecode_of(w[0], "pkg/core.py", "X = 1\n");
        const store::WheelBytecode extra =
            bytecode_of(w[0], "pkg-1.0.data/purelib/extra.py", "E = 1\n");
        Planned p = plan(w, {}, {{&core, &extra}});
        const env::PlannedFile* pyc = p.file("pkg/__pycache__/core.cpython-312.pyc");
        REQUIRE(pyc != nullptr);
        CHECK(pyc->bytecode);
        CHECK(pyc->object->digest == core.files[0].pyc.digest);
        REQUIRE(p.file("__pycache__/extra.cpython-312.pyc") != nullptr);
        CHECK_THAT(p.record("pkg-1.0.dist-info"), !Catch::Contains(".pyc"));
    }
    // A list whose source is not the member the environment gets (a damaged list, or one of
    // another wheel's) would put bytecode of other code beside a source: Python would run it.
    struct Row {
        const char* what;
        std::string source, content;
    };
    const std::vector<Row> rows = {
        {"a source compiled from other bytes", "pkg/core.py", "X = 2\n"},
        {"a member the wheel does not have", "pkg/gone.py", ""},
        {"a header, which is not installed into site-packages", "pkg-1.0.data/headers/gen.py",
         "H = 1\n"},
        {"the wheel's own METADATA", "pkg-1.0.dist-info/METADATA", "Name: pkg\n"},
    };
    for (const auto& r : rows) {
        INFO(r.what);
        const store::WheelBytecode b = bytecode_of(w[0], r.source, r.content);
        try {
            plan(w, {}, {{&b}});
            FAIL("planned without an error");
        } catch (const Error& e) {
            CHECK(e.code() == ErrorCode::integrity);
            CHECK_THAT(e.message(), Catch::Contains("names " + r.source +
                                                    ", which is not that module of the wheel"));
        }
    }
}
