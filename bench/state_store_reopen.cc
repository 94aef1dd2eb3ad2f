// How long a bidder's state store takes to open after its process was killed mid-day, with the
// store's options against RocksDB's default 64 MB memtable, in the same run.
//
// Each round books `n` notices as the bidder does (the dedupe key, the spend and the outbox
// entry in one batch, then the outbox entry dropped once "acknowledged"), in a child process
// that then ends without closing the store (std::_Exit, as SIGKILL leaves it), and times the
// next Open. Usage: state_store_reopen [n ...] (default: 60000 200000). Rerun:
// build/release/bench/state_store_reopen
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "rtb/bidder/state_store.h"

namespace {

using rtb::bidder::OutboxEntry;
using rtb::bidder::StateStore;
using rtb::bidder::StateStoreOptions;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The child's part: books n notices, writes the seconds it took to stdout and ends without
// closing the store. A fresh process (exec, not fork: RocksDB's background threads, which flush
// the memtable, do not survive a fork).
int Fill(const std::string& path, int mb, long n) {
  const auto t0 = Clock::now();
  auto s = StateStore::Open(path, StateStoreOptions{.write_buffer_mb = mb});
  if (!s.ok()) return 1;
  const std::string payload(330, 'x');  // an outcome event's size in the demo
  for (long i = 0; i < n; ++i) {
    const OutboxEntry e{"eid-" + std::to_string(i), "rtb.events", "k", payload};
    const auto r = (*s)->ApplyOnce(493'000, "auction-" + std::to_string(i) + "/1",
                                   static_cast<uint32_t>(i % 1000), "sim-1", rtb::Micros(1000), &e);
    if (!r.ok() || !*r) return 2;
    (*s)->ForgetOutbox(e.eid);
  }
  std::printf("%.6f\n", Seconds(t0));
  std::fflush(stdout);
  std::_Exit(0);  // no close: what SIGKILL leaves
}

// Runs Fill in a child process; the seconds it took, or a negative number on an error.
double FillAndDie(const std::string& self, const std::string& path, int mb, long n) {
  const std::string cmd =
      "'" + self + "' --fill '" + path + "' " + std::to_string(mb) + " " + std::to_string(n);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  double took = -1;
  if (std::fscanf(p, "%lf", &took) != 1) took = -1;
  return pclose(p) == 0 ? took : -1;
}

uint64_t WalBytes(const std::string& path) {
  uint64_t b = 0;
  for (const auto& f : std::filesystem::directory_iterator(path)) {
    if (f.path().extension() == ".log") b += f.file_size();
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--fill") {
    return Fill(argv[2], std::atoi(argv[3]), std::atol(argv[4]));
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  std::vector<long> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atol(argv[i]));
  if (sizes.empty()) sizes = {60'000, 200'000};
  const std::string root =
      std::filesystem::temp_directory_path() / ("state_store_reopen." + std::to_string(getpid()));
  std::printf("%-9s %-8s %10s %12s %10s\n", "notices", "memtable", "booked s", "WAL MB", "open s");
  int worst = 0;
  for (const long n : sizes) {
    double open_s[2] = {0, 0};
    // Ours first: it pays the process's one-time start of RocksDB.
    for (const int mb : {StateStoreOptions{}.write_buffer_mb, 64}) {
      const std::string path = root + "/" + std::to_string(n) + "-" + std::to_string(mb);
      const StateStoreOptions opt{.write_buffer_mb = mb};
      const double booked = FillAndDie(self, path, mb, n);
      if (booked < 0) {
        std::fprintf(stderr, "booking %ld notices failed\n", n);
        worst = 1;
        continue;
      }
      const double wal = static_cast<double>(WalBytes(path)) / 1e6;
      const auto t0 = Clock::now();
      auto s = StateStore::Open(path, opt);
      const double took = Seconds(t0);
      if (!s.ok() || !(*s)->Outbox().empty()) {
        std::fprintf(stderr, "reopening failed\n");
        worst = 1;
      }
      open_s[mb == 64 ? 0 : 1] = took;
      std::printf("%-9ld %5d MB %10.2f %12.1f %10.3f\n", n, mb, booked, wal, took);
    }
    if (open_s[0] > 0 && open_s[1] > 0)
      std::printf("%-9ld open ratio, 64 MB / ours: %.1fx\n", n, open_s[0] / open_s[1]);
  }
  std::filesystem::remove_all(root);
  return worst;
}
