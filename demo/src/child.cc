#include "child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <thread>

namespace rtb::demo {

namespace {
int ExitStatus(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st); }
}  // namespace

bool Child::Start() {
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const char* path = log.c_str();
  pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid > 0;
}

bool Child::Running() {
  if (pid <= 0) return false;
  int st = 0;
  if (::waitpid(pid, &st, WNOHANG) == pid) {
    pid = -1;
    return false;
  }
  return true;
}

int Child::Wait() {
  if (pid <= 0) return 0;
  int st = 0;
  ::waitpid(pid, &st, 0);
  pid = -1;
  return ExitStatus(st);
}

int Child::Stop(int sig, int timeout_ms) {
  if (pid <= 0) return 0;
  ::kill(pid, sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int st = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &st, WNOHANG) == pid) {
      pid = -1;
      return ExitStatus(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &st, 0);
  pid = -1;
  return -SIGKILL;
}

int FreePort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

}  // namespace rtb::demo
