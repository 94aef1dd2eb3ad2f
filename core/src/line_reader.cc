#include "rtb/core/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace rtb {
namespace {

constexpr size_t kChunk = size_t{64} << 10;  // bytes asked of the file per read

// "1 MiB (1048576 bytes)", or the bytes alone when not a whole number of MiB.
std::string Bytes(size_t n) {
  const std::string b = std::to_string(n) + " bytes";
  if (n == 0 || n % (size_t{1} << 20) != 0) return b;
  return std::to_string(n >> 20) + " MiB (" + b + ")";
}

// Opens path for reading; a directory is refused. *size receives a regular file's size.
Result<int> OpenForReading(const std::string& path, const std::string& what, size_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::NotFound(path + ": cannot open " + what + " (" + std::strerror(errno) + ")");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::IoError(path + ": is a directory; the " + what + " must be a file");
  }
  *size = S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) : 0;
  return fd;
}

// read(2) without EINTR: the bytes read (0 at the end), or -1 with errno.
ssize_t ReadSome(int fd, char* p, size_t n) {
  ssize_t got;
  do {
    got = ::read(fd, p, n);
  } while (got < 0 && errno == EINTR);
  return got;
}

}  // namespace

LineReader::LineReader(const std::string& path, const std::string& what, size_t max_line)
    : name_(path), max_line_(max_line) {
  auto fd = OpenForReading(path, what, &size_hint_);
  if (!fd.ok()) {
    status_ = fd.status();
    eof_ = true;
    return;
  }
  fd_ = *fd;
}

LineReader::LineReader(std::string_view text, std::string name, size_t max_line)
    : name_(std::move(name)), max_line_(max_line), size_hint_(text.size()), text_(text) {}

LineReader::LineReader(std::istream& in, std::string name, size_t max_line)
    : name_(std::move(name)), max_line_(max_line), in_(&in) {}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

void LineReader::TooLong() {
  status_ =
      Status::Corruption(name_ + ":" + std::to_string(line_no_ + 1) + ": a line longer than " +
                         Bytes(max_line_) + ", the most a line may hold (is this the right file?)");
}

bool LineReader::Refill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep only the line being read, at the front
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    scan_ -= begin_;
    begin_ = 0;
  }
  // Room for a chunk, but never more than a line of the limit and its '\n' need.
  const size_t cap = std::max(end_ + 1, std::min(end_ + kChunk, max_line_ + 2));
  if (buf_.size() < cap) buf_.resize(std::max(cap, std::min(2 * buf_.size(), max_line_ + 2)));
  const size_t want = buf_.size() - end_;
  ssize_t got = 0;
  if (fd_ >= 0) {
    got = ReadSome(fd_, buf_.data() + end_, want);
    if (got < 0) {
      status_ = Status::IoError(name_ + ": read error (" + std::strerror(errno) + ")");
      eof_ = true;
      return false;
    }
  } else {
    got = static_cast<ssize_t>(
        in_->rdbuf()->sgetn(buf_.data() + end_, static_cast<std::streamsize>(want)));
  }
  if (got == 0) eof_ = true;
  end_ += static_cast<size_t>(got);
  return got > 0;
}

bool LineReader::Next(std::string_view* line) {
  if (!status_.ok()) return false;
  if (fd_ < 0 && in_ == nullptr) {  // a text in memory
    if (begin_ >= text_.size()) return false;
    size_t end = text_.find('\n', begin_);
    if (end == std::string_view::npos) end = text_.size();
    if (end - begin_ > max_line_) {
      TooLong();
      return false;
    }
    *line = text_.substr(begin_, end - begin_);
    begin_ = end + 1;
    ++line_no_;
    return true;
  }
  while (true) {
    const void* nl = std::memchr(buf_.data() + scan_, '\n', end_ - scan_);
    if (nl != nullptr) {
      const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data());
      if (end - begin_ > max_line_) {
        TooLong();
        return false;
      }
      *line = std::string_view(buf_.data() + begin_, end - begin_);
      begin_ = scan_ = end + 1;
      ++line_no_;
      return true;
    }
    scan_ = end_;
    if (end_ - begin_ > max_line_) {
      TooLong();
      return false;
    }
    if (!Refill()) {
      if (!status_.ok() || begin_ == end_) return false;
      *line = std::string_view(buf_.data() + begin_, end_ - begin_);  // the last line, no '\n'
      begin_ = scan_ = end_;
      ++line_no_;
      return true;
    }
  }
}

Result<std::string> ReadBoundedFile(const std::string& path, const std::string& what,
                                    size_t max_bytes) {
  size_t size = 0;
  RTB_ASSIGN_OR_RETURN(const int fd, OpenForReading(path, what, &size));
  std::string out;
  out.resize(std::min(size, max_bytes) + 1);
  size_t n = 0;
  while (true) {
    if (n == out.size()) {
      if (n > max_bytes) break;
      out.resize(std::min(2 * out.size(), max_bytes + 1));
    }
    const ssize_t got = ReadSome(fd, out.data() + n, out.size() - n);
    if (got < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Status::IoError(path + ": read error (" + why + ")");
    }
    if (got == 0) break;
    n += static_cast<size_t>(got);
  }
  ::close(fd);
  if (n > max_bytes) {
    return Status::Corruption(path + ": " + what + " larger than " + Bytes(max_bytes) +
                              ", the most read at once (is this the right file?)");
  }
  out.resize(n);
  return out;
}

}  // namespace rtb
