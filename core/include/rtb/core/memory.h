// Process-wide allocator settings for programs that allocate and free large blocks over and over.
#pragma once

#include <cstddef>

namespace rtb {

// Makes glibc keep freed memory for reuse instead of handing it back to the kernel: blocks up to
// `mmap_threshold` bytes come from the heap (not a fresh mmap each time), and free space at the
// top of a heap is not trimmed until it exceeds `trim_threshold`. With glibc's defaults a
// program that allocates and frees the same large blocks over and over (the learner's tensors)
// maps and unmaps them again and again, and every new mapping faults its pages in: ~25% of a
// learner update (bench/run_learner_bench.sh). Call once at the start of the program, before its
// threads start.
void KeepFreedMemoryForReuse(size_t mmap_threshold, size_t trim_threshold);

}  // namespace rtb
