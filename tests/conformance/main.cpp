// Conformance suite: checks every row of the standards corpus (tests/data/corpus, see its
// README) against the pep and lock layers and prints, per section, rows checked and failed.
//
// A row listed in tests/data/corpus/DIVERGENCES.md (a line "- `file` `section` #index: …") is a
// deliberate divergence: it is still run and reported, but does not fail the suite. Every other
// failing row fails the suite. Usage: envbox_conformance CORPUS_DIR [-v]

#include <iomanip>
#include <regex>

#include "conformance/suite.hpp"

using namespace conformance;

namespace {

std::set<std::string> read_divergences(const std::string& path) {
    std::set<std::string> out;
    std::ifstream in(path);
    std::string line;
    static const std::regex row(R"(^- `([^`]+)` `([^`]+)` #(\d+))");
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, row))
            out.insert(m[1].str() + " " + m[2].str() + " " + m[3].str());
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: envbox_conformance CORPUS_DIR [-v]\n";
        return 2;
    }
    Suite s;
    s.dir = argv[1];
    s.verbose = argc > 2 && std::string(argv[2]) == "-v";
    s.divergences = read_divergences(s.dir + "/DIVERGENCES.md");
    try {
        pep_sections(s);
        pylock_sections(s);
        wheel_sections(s);
        index_sections(s);
    } catch (const std::exception& e) {
        std::cerr << "conformance: " << e.what() << "\n";
        return 1;
    }
    std::cout << "\nsection                                             checked   failed\n";
    for (const auto& [key, c] : s.counts)
        std::cout << std::left << std::setw(52) << key << std::right << std::setw(7) << c.first
                  << std::setw(9) << c.second << "\n";
    std::cout << "\nconformance: " << s.total << " rows checked, " << s.failed << " failed, "
              << s.diverged << " deliberate divergences (DIVERGENCES.md)\n";
    return s.failed == 0 ? 0 : 1;
}
