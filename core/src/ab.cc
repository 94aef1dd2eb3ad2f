#include "rtb/core/ab.h"

#include <cmath>

namespace rtb {

const char* ArmName(Arm arm) { return arm == Arm::kLearned ? "learned" : "manual"; }

std::optional<Arm> ParseArm(std::string_view s) {
  if (s == "learned") return Arm::kLearned;
  if (s == "manual") return Arm::kManual;
  return std::nullopt;
}

double ArmPoint(std::string_view unit, std::string_view salt) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (const char c : salt) mix(static_cast<unsigned char>(c));
  mix(0);
  for (const char c : unit) mix(static_cast<unsigned char>(c));
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

Arm ArmOf(std::string_view unit, std::string_view salt, double learned_share) {
  if (learned_share >= 1.0) return Arm::kLearned;
  if (learned_share <= 0.0) return Arm::kManual;
  return ArmPoint(unit, salt) < learned_share ? Arm::kLearned : Arm::kManual;
}

std::string_view ArmUnit(std::string_view user, std::string_view device, std::string_view request) {
  if (!user.empty()) return user;
  if (!device.empty()) return device;
  return request;
}

Micros ArmBudget(Micros budget, Arm arm, double learned_share) {
  const double share = learned_share < 0 ? 0 : learned_share > 1 ? 1 : learned_share;
  const int64_t learned = std::llround(static_cast<double>(budget.value()) * share);
  return Micros(arm == Arm::kLearned ? learned : budget.value() - learned);
}

}  // namespace rtb
