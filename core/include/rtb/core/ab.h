// The live A/B test: every user is hashed to the learned arm (bids with the action table) or
// the manual arm (bids a = 0), and every advertiser's daily budget is split between the arms
// by the same share, so neither arm can spend the other's budget.
//
// The assignment is a pure function of (unit, salt, share): the same user lands in the same
// arm on every request and in every bidder process, and a consumer of the events (the
// learner, `rtb report`) can recompute it. The unit is the user id (buyeruid, else user.id),
// else the device id, else the request id.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "rtb/core/types.h"

namespace rtb {

enum class Arm : uint8_t { kLearned = 0, kManual = 1 };
inline constexpr int kArms = 2;

const char* ArmName(Arm arm);                     // "learned" | "manual"
std::optional<Arm> ParseArm(std::string_view s);  // the inverse; nullopt for anything else

// The unit's position in [0, 1): 64-bit FNV-1a over salt, a 0 byte and the unit, then the
// splitmix64 finaliser (FNV alone leaves short similar ids clustered), top 53 bits.
double ArmPoint(std::string_view unit, std::string_view salt);
// kLearned when ArmPoint < learned_share: share 1 puts everyone in the learned arm, 0 everyone
// in the manual arm.
Arm ArmOf(std::string_view unit, std::string_view salt, double learned_share);
// The id an assignment hashes: the first non-empty of user, device, request.
std::string_view ArmUnit(std::string_view user, std::string_view device, std::string_view request);

// The arm's part of a budget, in micros: the learned arm gets round(budget x share), the
// manual arm the rest, so the two parts add up to the budget exactly.
Micros ArmBudget(Micros budget, Arm arm, double learned_share);

}  // namespace rtb
