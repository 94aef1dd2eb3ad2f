// `rtb train`, `tune`, `learn` and `train-pacing`: listed here for `rtb --help`, and run by
// rtb-learner (the only LibTorch binary) in place of this process, their --help included.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace rtb::cli {

// The four subcommands, for `rtb --help`; main() hands them to ExecLearner before parsing.
void AddLearnerCommands(CLI::App* app);
// Runs `rtb-learner <sub> args...` (the only LibTorch binary) in place of this process.
int ExecLearner(const std::string& sub, int argc, char** argv, int first);

}  // namespace rtb::cli
