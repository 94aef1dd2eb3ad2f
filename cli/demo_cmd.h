// `rtb demo`'s command line: options in, rtb::demo::RunDemo (demo/) runs the closed loop.
#pragma once

#include <CLI/CLI.hpp>

#include "rtb/demo/demo.h"

namespace rtb::cli {

CLI::App* AddDemoCommand(CLI::App* app, demo::DemoArgs* a);

}  // namespace rtb::cli
