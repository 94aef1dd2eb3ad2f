// The action table's JSON form as a value, for codecs that embed it (core/policy.h): the same
// validation and layout as ParseActionTable / SerializeActionTable, without a re-parse.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "rtb/core/status.h"

namespace rtb {

class ActionTable;  // rtb/core/action_table.h

Result<ActionTable> ActionTableFromJson(const nlohmann::json& j, const std::string& source);
nlohmann::ordered_json ActionTableToJson(const ActionTable& t);

}  // namespace rtb
