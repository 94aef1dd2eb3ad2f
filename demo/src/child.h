// The demo's child processes (rtb serve, rtb-learner), each with its output appended to a log
// file, and a free loopback port for the bidder.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace rtb::demo {

struct Child {
  std::string name;
  std::vector<std::string> args;  // args[0]: the executable
  std::string log;                // stdout and stderr are appended here
  pid_t pid = -1;

  // Starts the process (again, after a Stop); false if fork failed.
  bool Start();
  // Whether it still runs (reaps it if it exited).
  bool Running();
  // Waits for it to exit; its exit status (or -signal).
  int Wait();
  // `sig` (0: none, it was sent already), then SIGKILL after timeout_ms. Returns the exit status
  // (or -signal).
  int Stop(int sig, int timeout_ms);
  ~Child() { Stop(SIGKILL, 1000); }
};

// A port on 127.0.0.1 that nothing listens on now.
int FreePort();

}  // namespace rtb::demo
