// The demo report's renderings from its JSON (report.json): Markdown and an HTML page.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace rtb::demo {

std::string RenderDemoMarkdown(const nlohmann::json& r);
// The HTML page: the revenue chart, then the Markdown body.
std::string RenderDemoHtml(const nlohmann::json& r, const std::string& md);

}  // namespace rtb::demo
