// Helper of the crash test: appends transition k = NextSeq, NextSeq+1, ... to the RocksDB
// replay store at argv[1] forever, and after each Append returns OK prints "ack <seq>" on
// stdout (flushed). The test kills it with SIGKILL at random moments.
#include <cstdio>

#include "rtb/learner/replay_store.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto store = rtb::learn::OpenRocksDbReplayStore(argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  for (;;) {
    const uint64_t k = (*store)->NextSeq();
    rtb::learn::Transition t;
    t.s.assign(33, static_cast<float>(k));
    t.d.assign(9, 1.0f / 9);
    t.a.assign(9, static_cast<float>(k % 100) / 100.0f);
    t.r = {static_cast<float>(k), 1, 2};
    t.s2 = t.s;
    t.d2 = t.d;
    t.episode = k;
    auto seq = (*store)->Append(t);
    if (!seq.ok()) return 1;
    std::printf("ack %llu\n", static_cast<unsigned long long>(*seq));
    std::fflush(stdout);
  }
}
