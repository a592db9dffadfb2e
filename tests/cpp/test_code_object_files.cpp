// Reading code objects from files (runtime/code_object_file.hpp) and what reads them: the run-time
// loader behind set_aiter_root (runtime/code_objects.hpp) and jax-aiter-check-aiter
// (runtime/check_aiter.hpp). Things named like a code object that are not one: a directory, a
// FIFO (reading it would wait for a writer forever), a symlink to /dev/zero (endless bytes), a
// 3 GiB sparse file (read whole, 3 GiB of memory). Each must be a clear per-file error, at once.
//
// Its own executable with its own main: the address space is capped (RLIMIT_AS, 1 GiB above what
// the process maps at start) before any test runs, so reading one of these whole fails the
// process with bad_alloc (an abort) instead of passing slowly; ctest's TIMEOUT catches a hang.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "jax_aiter/kernels/aiter/bf16gemm.hpp"
#include "jax_aiter/runtime/check_aiter.hpp"
#include "jax_aiter/runtime/code_object_file.hpp"
#include "jax_aiter/runtime/code_objects.hpp"

namespace {

namespace fs = std::filesystem;
using jax_aiter::ErrorCode;
using jax_aiter::runtime::AiterCheck;
using jax_aiter::runtime::CodeObjects;
using jax_aiter::runtime::read_code_object_file;

constexpr int64_t kSparseBytes = int64_t{3} << 30;

// A fresh directory under the temp dir, removed at the end of the test.
class Scratch : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jax_aiter_co_files_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // One of each kind of thing named like a code object.
  static void make_directory(const fs::path& p) { fs::create_directories(p); }
  static void make_fifo(const fs::path& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); }
  static void make_dev_zero_link(const fs::path& p) { fs::create_symlink("/dev/zero", p); }
  static void make_sparse(const fs::path& p, int64_t bytes) {
    const int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, bytes), 0);
    ::close(fd);
  }
  static void make_regular(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
  }

  fs::path dir_;
};

void expect_error(const jax_aiter::Status& st, ErrorCode code, const std::string& path,
                  const std::string& why) {
  EXPECT_EQ(st.code(), code) << st.message();
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
}

using CodeObjectFile = Scratch;

TEST_F(CodeObjectFile, ReadsARegularFile) {
  make_regular(dir_ / "a.co", "sixteen bytes!!!");
  auto got = read_code_object_file(dir_ / "a.co");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->size(), 16u);
  EXPECT_EQ(static_cast<char>((*got)[0]), 's');
}

TEST_F(CodeObjectFile, MissingIsNotFound) {
  const std::string p = dir_ / "none.co";
  expect_error(read_code_object_file(p).status(), ErrorCode::kNotFound, p, "cannot open");
  make_regular(dir_ / "file", "x");
  expect_error(read_code_object_file(dir_ / "file" / "x.co").status(),  // ENOTDIR on the way
               ErrorCode::kNotFound, dir_ / "file" / "x.co", "cannot open");
}

TEST_F(CodeObjectFile, DirectoryIsRefused) {
  make_directory(dir_ / "d.co");
  expect_error(read_code_object_file(dir_ / "d.co").status(), ErrorCode::kInvalidArgument,
               dir_ / "d.co", "expected a regular file, got a directory");
}

TEST_F(CodeObjectFile, FifoIsRefusedWithoutWaiting) {
  make_fifo(dir_ / "f.co");
  expect_error(read_code_object_file(dir_ / "f.co").status(), ErrorCode::kInvalidArgument,
               dir_ / "f.co", "expected a regular file, got a FIFO");
}

TEST_F(CodeObjectFile, DeviceBehindASymlinkIsRefused) {
  make_dev_zero_link(dir_ / "z.co");
  expect_error(read_code_object_file(dir_ / "z.co").status(), ErrorCode::kInvalidArgument,
               dir_ / "z.co", "expected a regular file, got a character device");
}

TEST_F(CodeObjectFile, OversizedFileIsRefusedByItsSize) {
  make_sparse(dir_ / "big.co", kSparseBytes);
  expect_error(read_code_object_file(dir_ / "big.co").status(), ErrorCode::kInvalidArgument,
               dir_ / "big.co", "got 3221225472");
  // The cap itself: one byte over it is refused, a file at it is read.
  make_regular(dir_ / "small.co", "12345678");
  EXPECT_TRUE(read_code_object_file(dir_ / "small.co", 8).ok());
  expect_error(read_code_object_file(dir_ / "small.co", 7).status(), ErrorCode::kInvalidArgument,
               dir_ / "small.co", "expected at most 7 bytes");
}

// ---- the run-time loader --------------------------------------------------------------------

using RuntimeLoader = Scratch;

TEST_F(RuntimeLoader, RootMustBeAnAiterCheckout) {
  const std::string missing = dir_ / "nonexistent";
  expect_error(CodeObjects::set_aiter_root(missing), ErrorCode::kNotFound, missing,
               "No such file or directory");
  expect_error(CodeObjects::set_aiter_root(dir_.string()), ErrorCode::kNotFound,
               (dir_ / "hsa").string(), "an AITER checkout holds hsa/");
  EXPECT_FALSE(CodeObjects::set_aiter_root("").ok());
  make_regular(dir_ / "file", "x");
  expect_error(CodeObjects::set_aiter_root((dir_ / "file").string()), ErrorCode::kInvalidArgument,
               (dir_ / "file").string(), "expected a directory, got a regular file");
}

TEST_F(RuntimeLoader, EachUnreadableCodeObjectIsItsOwnError) {
  const fs::path hsa = dir_ / "hsa" / "gfx942" / "test_files";
  make_directory(hsa);
  make_directory(hsa / "dir.co");
  make_fifo(hsa / "fifo.co");
  make_dev_zero_link(hsa / "zero.co");
  make_sparse(hsa / "sparse.co", kSparseBytes);
  make_regular(hsa / "fine.co", "bytes of a code object");
  ASSERT_TRUE(CodeObjects::set_aiter_root(dir_.string()).ok());

  auto fine = CodeObjects::find("test_files/fine.co", "gfx942");
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ(fine->bytes.size(), 22u);
  for (const auto& [name, why] : {std::pair<std::string, std::string>{"dir.co", "a directory"},
                                  {"fifo.co", "a FIFO"},
                                  {"zero.co", "a character device"},
                                  {"sparse.co", "expected at most"}}) {
    auto got = CodeObjects::find("test_files/" + name, "gfx942");
    ASSERT_FALSE(got.ok()) << name;
    expect_error(got.status(), ErrorCode::kInvalidArgument, (hsa / name).string(), why);
  }
  // Absent is still NotFound (the binder passes the call to the next tier).
  EXPECT_EQ(CodeObjects::find("test_files/absent.co", "gfx942").status().code(),
            ErrorCode::kNotFound);
}

// ---- jax-aiter-check-aiter ------------------------------------------------------------------

using CheckAiter = Scratch;

TEST_F(CheckAiter, RootMustBeAnAiterCheckout) {
  const std::string missing = dir_ / "nonexistent";
  auto none = jax_aiter::runtime::check_aiter(missing);
  ASSERT_FALSE(none.ok());
  expect_error(none.status(), ErrorCode::kNotFound, missing, "No such file or directory");
  auto no_hsa = jax_aiter::runtime::check_aiter(dir_.string());
  ASSERT_FALSE(no_hsa.ok());
  expect_error(no_hsa.status(), ErrorCode::kNotFound, (dir_ / "hsa").string(), "hsa/");
}

TEST_F(CheckAiter, EachUnreadableCodeObjectIsAMismatchSayingWhy) {
  // Five of the bf16gemm gfx942 code objects our tables name, each replaced by something else.
  const auto& rows =
      jax_aiter::kernels::AiterTables<jax_aiter::kernels::kAiterBf16GemmRows>::kGfx942;
  ASSERT_GE(rows.size(), 5u);
  const fs::path arch = dir_ / "hsa" / "gfx942";
  const std::string why[5] = {"a directory", "a FIFO", "a character device", "expected at most",
                              "not an ELF"};
  for (size_t i = 0; i < 5; ++i) {
    const fs::path p = arch / std::string(rows[i]->code_object);
    make_directory(p.parent_path());
    switch (i) {
      case 0: make_directory(p); break;
      case 1: make_fifo(p); break;
      case 2: make_dev_zero_link(p); break;
      case 3: make_sparse(p, kSparseBytes); break;
      case 4: make_regular(p, "not a code object"); break;
    }
  }
  auto report = jax_aiter::runtime::check_aiter(dir_.string());
  ASSERT_TRUE(report.ok()) << report.status().message();
  size_t mismatches = 0;
  for (const AiterCheck& c : *report) {
    for (size_t i = 0; i < 5; ++i) {
      if (c.arch != "gfx942" || c.code_object != rows[i]->code_object) continue;
      ++mismatches;
      EXPECT_EQ(c.result, AiterCheck::Result::kMismatch) << c.code_object;
      EXPECT_NE(c.detail.find(why[i]), std::string::npos) << c.code_object << ": " << c.detail;
    }
    if (c.result == AiterCheck::Result::kMismatch) continue;
    EXPECT_EQ(c.result, AiterCheck::Result::kMissing) << c.code_object;
  }
  EXPECT_EQ(mismatches, 5u);
}

}  // namespace

int main(int argc, char** argv) {
  // Cap the address space at what is mapped now plus 1 GiB (the 3 GiB sparse file, read whole,
  // would not fit; /dev/zero would reach the cap in seconds).
  long pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const rlim_t cap = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (rlim_t{1} << 30);
  const rlimit limit{cap, cap};
  if (pages <= 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) {
    std::fprintf(stderr, "test_code_object_files: could not cap the address space\n");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
