#include <catch2/catch.hpp>

#include "envbox/pep/wheel.hpp"

using namespace envbox::pep;

TEST_CASE("shell quoting of interpreter paths") {
    struct Row {
        const char* word;
        const char* quoted;
    };
    const Row rows[] = {
        {"/env/bin/python", R"('/env/bin/python')"},
        {"/home/a b/bin/python", R"('/home/a b/bin/python')"},
        {"/h/$HOME x (1)/python", R"('/h/$HOME x (1)/python')"},
        {"/h/`id`/python", R"('/h/`id`/python')"},
        {"/h/say \"hi\"/python", R"('/h/say "hi"/python')"},
        {"/h/it's/python", R"('/h/it'\''s/python')"},
        {"/h/''/python", R"('/h/'\'''\''/python')"},
        {"/h/a\\N\\x/python", R"('/h/a'"\\"'N'"\\"'x/python')"},
        {"", "''"},
    };
    for (const auto& r : rows) {
        INFO(r.word);
        CHECK(sh_quote(r.word) == r.quoted);
    }
}

TEST_CASE("shebangs: plain where the kernel reads the path whole, a trampoline elsewhere") {
    struct Row {
        const char* python;
        const char* shebang;
    };
    const std::string long_path = "/" + std::string(130, 'p') + "/python";
    const Row rows[] = {
        {"/env/bin/python", "#!/env/bin/python\n"},
        // The kernel takes $, quotes and parentheses literally: no trampoline needed.
        {"/h/$HOME(1)/python", "#!/h/$HOME(1)/python\n"},
        {"/h/$HOME x (1)/python",
         "#!/bin/sh\n'''exec' '/h/$HOME x (1)/python' \"$0\" \"$@\"\n' '''\n"},
        {"/h/tab\there/python", "#!/bin/sh\n'''exec' '/h/tab\there/python' \"$0\" \"$@\"\n' '''\n"},
        {"/h/it's `x` \"q\"/python",
         "#!/bin/sh\n'''exec' '/h/it'\\''s `x` \"q\"/python' \"$0\" \"$@\"\n' '''\n"},
        {"/h/back\\slash x/python",
         "#!/bin/sh\n'''exec' '/h/back'\"\\\\\"'slash x/python' \"$0\" \"$@\"\n' '''\n"},
        {long_path.c_str(), nullptr},
    };
    for (const auto& r : rows) {
        INFO(r.python);
        std::string got = shebang_for(r.python);
        if (r.shebang)
            CHECK(got == r.shebang);
        else
            CHECK(got ==
                  "#!/bin/sh\n'''exec' '" + std::string(r.python) + "' \"$0\" \"$@\"\n' '''\n");
    }
}

TEST_CASE("scripts and launchers carry the same shebang") {
    const char* python = "/h/$HOME x (1)/python";
    CHECK(rewrite_shebang("#!python\nprint(1)\n", python) == shebang_for(python) + "print(1)\n");
    CHECK(rewrite_shebang("#!pythonw -E\r\nprint(1)\r\n", python) ==
          shebang_for(python) + "print(1)\r\n");
    CHECK(rewrite_shebang("#!/usr/bin/env python\nprint(1)\n", python) ==
          "#!/usr/bin/env python\nprint(1)\n");
    EntryPoint e{"tool", "pkg.cli", "main", false};
    std::string launcher = launcher_script(e, python);
    CHECK(launcher.rfind(shebang_for(python), 0) == 0);
    CHECK_THAT(launcher, Catch::Contains("from pkg.cli import main\n"));
}

// A drive letter hidden behind `./` (`./a:/.` normalised to `a:`) was let through while the same
// name written plainly was refused. Found by fuzz_metadata; safe_member_path is idempotent now.
TEST_CASE("member paths are checked for drive letters after normalisation too") {
    for (const char* path : {"./a:/.", ".//c:/x", "./././Z:"}) {
        INFO(path);
        auto r = envbox::pep::safe_member_path(path);
        REQUIRE_FALSE(r.ok());
        CHECK_THAT(r.error().message(), Catch::Contains("drive letter"));
    }
    auto ok = envbox::pep::safe_member_path("./pkg/a:b.py");
    REQUIRE(ok.ok());
    CHECK(*ok == "pkg/a:b.py");
}
