// envbox diff A [B], envbox diff --textconv FILE
#include "envbox/ops/diff.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "envbox/util/error.hpp"

namespace envbox::cli {

void run_diff(const GlobalOptions& global, const std::string& a, const std::string& b,
              const std::string& format, const std::string& textconv_file) {
    if (!textconv_file.empty()) {
        std::fputs(ops::textconv(textconv_file).c_str(), stdout);
        return;
    }
    if (a.empty())
        throw Error(ErrorCode::usage, "envbox diff needs A (and optionally B), or --textconv FILE");
    ConsoleProgress progress(global.verbosity, false);
    ops::Context ctx = make_context(global, progress);
    auto [old_side, new_side] =
        b.empty() ? ops::load_sides(ctx, a)
                  : std::pair{ops::load_side(ctx, a, false), ops::load_side(ctx, b, false)};
    ops::Diff d = ops::diff(old_side, new_side);
    std::string out;
    if (format == "json" || global.json)
        out = ops::render_json(d);
    else if (format == "markdown")
        out = ops::render_markdown(d);
    else {
        bool color = global.color == "always" ||
                     (global.color == "auto" && ::isatty(1) && !std::getenv("NO_COLOR"));
        out = ops::render_text(d, color);
    }
    std::fputs(out.c_str(), stdout);
}

}  // namespace envbox::cli
