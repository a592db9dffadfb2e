// Reading a code object from a file (an AITER checkout's hsa/<arch>/...co), for the run-time
// loader (runtime/code_objects.hpp) and jax-aiter-check-aiter (runtime/check_aiter.hpp). Only a
// regular file is read, and only up to kMaxCodeObjectFileBytes: a directory, FIFO, socket or
// device named like a code object (say a symlink to /dev/zero) is refused before a byte is read,
// without blocking; a larger file is refused by its size. Every failure is a Status naming the
// path, never an exception or an abort. Also the check that a folder is an AITER checkout at all.
// POSIX only (open/fstat/read), as the HIP backend is.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/core/status.hpp"

namespace jax_aiter::runtime {

// AITER's largest code object at e4048607a535 is a few MiB; 256 MiB is far above any real one and
// still a bounded allocation.
inline constexpr int64_t kMaxCodeObjectFileBytes = int64_t{256} << 20;

namespace code_object_file_detail {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

inline const char* kind_of(mode_t mode) {
  return S_ISREG(mode)    ? "a regular file"
         : S_ISDIR(mode)  ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "an unknown kind of file";
}

}  // namespace code_object_file_detail

// The bytes of the code object at `path`. NotFound when nothing is there; InvalidArgument when it
// is not a regular file or is larger than `max_bytes`; another code when reading fails.
inline Expected<std::vector<std::byte>> read_code_object_file(
    const std::string& path, int64_t max_bytes = kMaxCodeObjectFileBytes) {
  namespace d = code_object_file_detail;
  const auto problem = [&](ErrorCode code, const auto&... what) {
    return Status(code, StrCat("jax_aiter: code object ", path, ": ", what...));
  };
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one; the
  // fstat below refuses it. Symlinks are followed, and the target is what fstat describes.
  d::Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    return problem(err == ENOENT || err == ENOTDIR ? ErrorCode::kNotFound
                   : err == EACCES                 ? ErrorCode::kPermissionDenied
                                                   : ErrorCode::kUnavailable,
                   "cannot open: ", std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return problem(ErrorCode::kUnavailable, "cannot stat: ", std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return problem(ErrorCode::kInvalidArgument, "expected a regular file, got ",
                   d::kind_of(st.st_mode));
  }
  if (st.st_size > max_bytes) {
    return problem(ErrorCode::kInvalidArgument, "expected at most ", max_bytes,
                   " bytes (far above any real code object), got ", int64_t{st.st_size});
  }
  std::vector<std::byte> bytes;
  try {
    bytes.resize(static_cast<size_t>(st.st_size));
  } catch (const std::bad_alloc&) {
    return problem(ErrorCode::kResourceExhausted, "no memory for its ", int64_t{st.st_size},
                   " bytes");
  }
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return problem(ErrorCode::kUnavailable, "read failed: ", std::strerror(errno));
    if (n == 0) break;  // shrank since fstat: keep what is there (the parser judges it)
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);  // a file that grew since fstat is read to its size then: bounded either way
  return bytes;
}

// Whether `root` looks like an AITER checkout: a directory holding an hsa/ directory. The error
// says what is wrong with it, after "jax_aiter: <who>: " (set_aiter_root, check_aiter).
inline Status check_aiter_root(const std::string& root, std::string_view who) {
  namespace d = code_object_file_detail;
  if (root.empty()) return InvalidArgument(StrCat("jax_aiter: ", who, ": empty path"));
  struct stat st {};
  for (const std::string& dir : {root, root + "/hsa"}) {
    const std::string what =
        dir == root ? StrCat("AITER root ", root)
                    : StrCat(dir, " (an AITER checkout holds hsa/<arch>/...; is ", root, " one?)");
    if (::stat(dir.c_str(), &st) != 0) {
      const int err = errno;
      return Status(
          err == ENOENT || err == ENOTDIR ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument,
          StrCat("jax_aiter: ", who, ": ", what, ": ", std::strerror(err)));
    }
    if (!S_ISDIR(st.st_mode)) {
      return InvalidArgument(StrCat("jax_aiter: ", who, ": ", what, ": expected a directory, got ",
                                    d::kind_of(st.st_mode)));
    }
  }
  return {};
}

}  // namespace jax_aiter::runtime
