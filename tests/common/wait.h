// Waiting in tests: for something to happen, never for time to pass. Time that a component
// judges (timeouts, intervals, a bidder's silence) passes on a ManualClock the test advances
// (rtb/core/clock.h); what a test waits for here is an event in real time (a message through
// Kafka, a thread's turn, a process answering), bounded so that a test that never sees it fails
// instead of hanging.
#pragma once

#include <chrono>
#include <thread>

namespace rtb::test {

// Polls `done` every `every` until it holds or `limit` of real time has passed; returns
// whether it held (checked once more at the end).
template <typename F>
bool WaitUntil(F done, std::chrono::milliseconds limit = std::chrono::seconds(10),
               std::chrono::milliseconds every = std::chrono::milliseconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return done();
}

}  // namespace rtb::test
