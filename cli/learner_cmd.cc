#include "learner_cmd.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common.h"
#include "rtb/demo/demo.h"
#include "rtb/learner/algo_spec.h"

namespace rtb::cli {

void AddLearnerCommands(CLI::App* app) {
  auto* tr = app->add_subcommand(
      "train",
      "Train and compare bidding agents (runs rtb-learner, the LibTorch binary): --config <yaml> "
      "--algo <" +
          learn::AlgoNameList("|") +
          "|all> --seeds <k> --episodes <n> --out <dir> --jobs <n> --resume");
  tr->allow_extras();
  auto* tu = app->add_subcommand(
      "tune",
      "Search learner configurations by successive halving (runs rtb-learner tune): --config "
      "<yaml> --algo <method> --trials <n> --min-episodes <n> --eta <k> --max-episodes <n> "
      "--seed <s> --jobs <n> --out <dir>");
  tu->allow_extras();
  auto* ln = app->add_subcommand(
      "learn",
      "Learn online from the bidders' Kafka events and publish action tables (runs rtb-learner "
      "learn): --config <yaml> --market <bidder config> --brokers <host:port> --state-dir <dir> "
      "--init <checkpoint> --max-steps <n>");
  ln->allow_extras();
  // Listed for `rtb --help`; main() hands it to rtb-learner before parsing.
  app->add_subcommand(
         "train-pacing",
         "Train the single-campaign pacing policy (runs rtb-learner train-pacing): --info "
         "<campaign summary> --log <training log> --base <lin|rlb> --out <table>; "
         "--help lists the rest")
      ->allow_extras();
}

int ExecLearner(const std::string& sub, int argc, char** argv, int first) {
  const std::string exe = (demo::ExeDir() / "rtb-learner").string();
  // argv[0] "rtb": the learner's help reads "rtb train ...", as typed (it re-executes
  // /proc/self/exe).
  std::vector<std::string> args = {"rtb", sub};
  bool has_config = false;
  for (int i = first; i < argc; ++i) {
    args.emplace_back(argv[i]);
    has_config = has_config || std::string(argv[i]).rfind("--config", 0) == 0;
  }
  if (!has_config && sub != "train-pacing") {  // it takes no learner config
    args.push_back("--config");
    args.push_back(DefaultConfig("configs/learner/default.yaml"));
  }
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  ::execv(exe.c_str(), cargs.data());
  std::fprintf(stderr, "rtb: error: cannot run %s (%s); build it with RTB_BUILD_LEARNER=ON\n",
               exe.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace rtb::cli
