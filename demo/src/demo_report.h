// The demo report (report.json's data) as a document of core's one report renderer
// (rtb/core/report_doc.h): Markdown and HTML from the same document.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "rtb/core/report_doc.h"

namespace rtb::demo {

doc::Document BuildDemoDocument(const nlohmann::json& r, const std::string& currency = "USD");
std::string RenderDemoMarkdown(const nlohmann::json& r, const std::string& currency = "USD");
std::string RenderDemoHtml(const nlohmann::json& r, const std::string& currency = "USD");

}  // namespace rtb::demo
