// Reading an input line by line in bounded memory: what `rtb report` and `rtb replay` read
// their logs and event dumps with. A file of any size is read in chunks; a line is never longer
// than a limit (kMaxLineBytes unless told), so neither a whole file nor an unbounded line is
// ever held in memory. A line over the limit, a directory, an unreadable file and a read error
// are errors naming the input (and its line), never an exception.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>

#include "rtb/core/status.h"

namespace rtb {

// The longest line a log or an event dump may hold (bytes, without its '\n'). Far above any
// real line (an outcome event is under 1 KiB, an iPinYou line under 4 KiB).
inline constexpr size_t kMaxLineBytes = size_t{1} << 20;  // 1 MiB

// The largest whole JSON file read at once (campaign summaries, pacing tables).
inline constexpr size_t kMaxJsonFileBytes = size_t{64} << 20;  // 64 MiB

class LineReader {
 public:
  // Reads the file at path (a regular file, a pipe, a device). `what` names what it should hold
  // ("log", "events dump") in the errors. A file that cannot be opened, or a directory, leaves
  // status() not ok and Next() false.
  LineReader(const std::string& path, const std::string& what, size_t max_line = kMaxLineBytes);
  // Reads a text already in memory (not copied: it must outlive the reader); name is how errors
  // name it.
  LineReader(std::string_view text, std::string name, size_t max_line = kMaxLineBytes);
  // Reads a stream (not owned).
  LineReader(std::istream& in, std::string name, size_t max_line = kMaxLineBytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line without its '\n' (a last line without one is returned too),
  // valid until the next call. False at the end of the input, or on an error (status() says
  // which): a line longer than the limit is "name:line: ..." naming the limit.
  bool Next(std::string_view* line);

  const Status& status() const { return status_; }
  const std::string& name() const { return name_; }
  // The number of the line Next() returned last (1 for the first).
  int64_t line_no() const { return line_no_; }
  // The input's size in bytes when known up front (a regular file, a text), else 0: a hint to
  // reserve for what is parsed from it.
  size_t size_hint() const { return size_hint_; }
  // How many records to reserve for the input at about bytes_per_record each: size_hint() /
  // bytes_per_record + 1, at most 2^24 (a huge file does not reserve address space up front;
  // what it holds grows as it is read).
  size_t ReserveHint(size_t bytes_per_record) const {
    const size_t n = size_hint_ / bytes_per_record + 1;
    return n < (size_t{1} << 24) ? n : size_t{1} << 24;
  }

 private:
  bool Refill();  // reads more into buf_; false at the end of the input or on an error
  void TooLong();

  std::string name_;
  size_t max_line_;
  Status status_;
  int64_t line_no_ = 0;
  size_t size_hint_ = 0;
  int fd_ = -1;                 // a file opened here
  std::istream* in_ = nullptr;  // or a stream
  std::string_view text_;       // or a text in memory
  std::string buf_;             // [begin_, end_): read, not yet returned; [begin_, scan_): no '\n'
  size_t begin_ = 0, scan_ = 0, end_ = 0;
  bool eof_ = false;
};

// The whole content of a small file (a JSON document), at most max_bytes: a larger file, a
// directory or an unreadable file is an error naming it and what it should hold.
Result<std::string> ReadBoundedFile(const std::string& path, const std::string& what,
                                    size_t max_bytes = kMaxJsonFileBytes);

}  // namespace rtb
