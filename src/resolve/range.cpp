#include "envbox/resolve/range.hpp"

namespace envbox::resolve {

std::size_t VersionSet::count() const {
    std::size_t c = 0;
    for (auto x : w)
        c += static_cast<std::size_t>(__builtin_popcountll(x));
    return c;
}

VersionSet VersionSet::operator&(const VersionSet& o) const {
    VersionSet r = *this;
    for (std::size_t i = 0; i < w.size(); ++i)
        r.w[i] &= o.w[i];
    return r;
}

VersionSet VersionSet::operator|(const VersionSet& o) const {
    VersionSet r = *this;
    for (std::size_t i = 0; i < w.size(); ++i)
        r.w[i] |= o.w[i];
    return r;
}

VersionSet VersionSet::minus(const VersionSet& o) const {
    VersionSet r = *this;
    for (std::size_t i = 0; i < w.size(); ++i)
        r.w[i] &= ~o.w[i];
    return r;
}

bool VersionSet::subset_of(const VersionSet& o) const {
    for (std::size_t i = 0; i < w.size(); ++i)
        if (w[i] & ~o.w[i]) return false;
    return true;
}

Term intersect(const Term& a, const Term& b) {
    if (a.positive && b.positive) return {a.pkg, true, a.set & b.set};
    if (a.positive) return {a.pkg, true, a.set.minus(b.set)};
    if (b.positive) return {a.pkg, true, b.set.minus(a.set)};
    return {a.pkg, false, a.set | b.set};
}

Term unite(const Term& a, const Term& b) {
    return intersect(a.negate(), b.negate()).negate();
}

bool subset(const Term& a, const Term& b) {
    if (a.positive && b.positive) return a.set.subset_of(b.set);
    if (a.positive) return (a.set & b.set).empty();
    if (b.positive) return false;
    return b.set.subset_of(a.set);
}

bool disjoint(const Term& a, const Term& b) {
    if (a.positive && b.positive) return (a.set & b.set).empty();
    if (a.positive) return a.set.subset_of(b.set);
    if (b.positive) return b.set.subset_of(a.set);
    return false;
}

}  // namespace envbox::resolve
