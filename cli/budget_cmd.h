// `rtb budget`: the budget-lease coordinator (budget/), until SIGINT or SIGTERM.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "rtb/budget/coordinator.h"

namespace rtb::cli {

struct BudgetArgs {
  std::string market;  // the bidders' config: advertisers, budgets, A/B share, billing window
  rtb::budget::CoordinatorOptions c;
  std::string admin_listen;  // host:port of /metrics and /healthz; empty: none
};

CLI::App* AddBudgetCommand(CLI::App* app, BudgetArgs* a);
int RunBudget(BudgetArgs a);

}  // namespace rtb::cli
