// libFuzzer target: the simple-repository page parsers (index/simple): HTML (PEP 503/592/658/714)
// and JSON (PEP 691/700) project pages, and the URL helpers they use. Hostile pages must come
// back as an error or a page, never as a crash, a foreign exception or a hang.
#include <cstdint>
#include <string>
#include <string_view>

#include "envbox/index/simple.hpp"
#include "envbox/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string_view page_url = "https://index.example/simple/pkg/";
    try {
        auto html = envbox::index::parse_html_page(text, page_url);
        if (html.ok())
            for (const auto& f : html->files)
                envbox::index::url_hash(f.url);
        auto json = envbox::index::parse_json_page(text, page_url);
        (void)json;
        envbox::index::html_unescape(text.substr(0, 4096));
        std::string_view first_line = text.substr(0, text.find('\n'));
        envbox::index::join_url(page_url, first_line);
        envbox::index::url_hash(first_line);
    } catch (const envbox::Error&) {
    }
    return 0;
}
