// libFuzzer target: PEP 440 versions and specifiers, PEP 508 requirements and markers
// (pep/version, pep/specifier, pep/requirement, pep/marker). Beyond "no crash": whatever parses
// prints a canonical form that parses again to an equal value and prints the same again.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "envbox/pep/marker.hpp"
#include "envbox/pep/requirement.hpp"
#include "envbox/pep/specifier.hpp"
#include "envbox/pep/version.hpp"
#include "envbox/util/error.hpp"

namespace {

void versions(std::string_view text) {
    auto v = envbox::pep::Version::parse(text);
    if (v.ok() != envbox::pep::Version::try_parse(text).has_value()) std::abort();
    if (!v.ok()) return;
    auto again = envbox::pep::Version::parse(v->str());
    if (!again.ok() || !(*again == *v) || again->str() != v->str()) std::abort();
    envbox::pep::canonicalize_version(text);
}

void specifiers(std::string_view text, std::string_view candidate) {
    auto s = envbox::pep::SpecifierSet::parse(text);
    if (!s.ok()) return;
    auto again = envbox::pep::SpecifierSet::parse(s->str());
    if (!again.ok() || !(*again == *s) || again->str() != s->str()) std::abort();
    s->contains(envbox::pep::Candidate::from_text(candidate));
}

void requirements(std::string_view text) {
    auto r = envbox::pep::Requirement::parse(text);
    if (!r.ok()) return;
    auto again = envbox::pep::Requirement::parse(r->str());
    if (!again.ok() || !(*again == *r) || again->str() != r->str()) std::abort();
}

void markers(std::string_view text) {
    auto m = envbox::pep::Marker::parse(text);
    if (!m.ok()) return;
    auto again = envbox::pep::Marker::parse(m->str());
    if (!again.ok() || again->str() != m->str()) std::abort();
    static const auto env = envbox::pep::MarkerEnvironment::linux_cpython("3.12.8", "x86_64");
    (void)m->evaluate(env, envbox::pep::MarkerContext::metadata);
    (void)m->evaluate(env, envbox::pep::MarkerContext::lock_file);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    std::size_t nl = text.find('\n');
    std::string_view first = text.substr(0, nl), rest = nl == text.npos ? "" : text.substr(nl + 1);
    try {
        versions(first);
        specifiers(first, rest);
        requirements(first);
        markers(first);
    } catch (const envbox::Error&) {
    }
    return 0;
}
