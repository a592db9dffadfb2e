// Tests for runtime/code_object.hpp (ELF + AMDGPU metadata reader) and runtime/kernarg_check.hpp.
//
// The real-object tests read a gfx950 code object compiled from data/kernarg_probe.hip at build
// time and compare the reader with what llvm-readelf-22 prints for it, run here at test time: the
// expected numbers come from LLVM, not from this file. Robustness tests truncate and corrupt that
// object and hand-built ones; any outcome but a crash (or an exception) is acceptable there, as
// long as damaged input is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "code_object_builder.hpp"
#include "jax_aiter/core/status.hpp"
#include "jax_aiter/kernels/kernel.hpp"
#include "jax_aiter/kernels/rmsnorm.hpp"
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"

#ifndef JAX_AITER_TEST_PROBE_CO
#define JAX_AITER_TEST_PROBE_CO ""
#endif
#ifndef JAX_AITER_TEST_LLVM_READELF
#define JAX_AITER_TEST_LLVM_READELF ""
#endif

namespace {

using jax_aiter::ErrorCode;
using jax_aiter::Status;
using jax_aiter::kernels::ArgField;
using jax_aiter::kernels::ArgKind;
using jax_aiter::kernels::KernelInfo;
using jax_aiter::runtime::check_kernel_arguments;
using jax_aiter::runtime::CodeObjectInfo;
using jax_aiter::runtime::KernelArgMetadata;
using jax_aiter::runtime::KernelMetadata;
using jax_aiter::runtime::read_code_object;
using Bytes = std::vector<std::byte>;
using namespace code_object_builder;

constexpr std::string_view kProbeCo = JAX_AITER_TEST_PROBE_CO;
constexpr std::string_view kReadelf = JAX_AITER_TEST_LLVM_READELF;
constexpr std::string_view kRmsNormCo = JAX_AITER_TEST_RMSNORM_CO;  // empty without clang-22

// ---------------------------------------------------------------------------------------------
// Helpers

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Bytes out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

Bytes to_bytes(std::string_view s) {
  Bytes out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

// A failed read must carry one of the two codes the API promises, and a message saying so.
void expect_refused(const jax_aiter::Expected<CodeObjectInfo>& r, const std::string& context) {
  ASSERT_FALSE(r.ok()) << context;
  const ErrorCode code = r.status().code();
  EXPECT_TRUE(code == ErrorCode::kInvalidArgument || code == ErrorCode::kDataLoss)
      << context << ": code " << static_cast<int>(code) << ": " << r.status().message();
  EXPECT_EQ(r.status().message().rfind("jax_aiter: code object: ", 0), 0u) << r.status().message();
}

KernelMetadata sample_kernel() {
  KernelMetadata k;
  k.name = "sample";
  k.symbol = "sample.kd";
  k.kernarg_segment_size = 288;
  k.kernarg_segment_align = 8;
  k.group_segment_fixed_size = 1024;
  k.private_segment_fixed_size = 16;
  k.wavefront_size = 64;
  k.args = {{"out", 0, 8, "global_buffer"},
            {"n", 8, 4, "by_value"},
            {"", 12, 4, "by_value"},
            {"", 16, 4, "hidden_block_count_x"},
            {"", 24, 8, "hidden_global_offset_x"}};
  return k;
}

void expect_same(const KernelMetadata& a, const KernelMetadata& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.symbol, b.symbol);
  EXPECT_EQ(a.kernarg_segment_size, b.kernarg_segment_size);
  EXPECT_EQ(a.kernarg_segment_align, b.kernarg_segment_align);
  EXPECT_EQ(a.group_segment_fixed_size, b.group_segment_fixed_size);
  EXPECT_EQ(a.private_segment_fixed_size, b.private_segment_fixed_size);
  EXPECT_EQ(a.wavefront_size, b.wavefront_size);
  ASSERT_EQ(a.args.size(), b.args.size());
  for (size_t i = 0; i < a.args.size(); ++i) {
    EXPECT_EQ(a.args[i].name, b.args[i].name) << i;
    EXPECT_EQ(a.args[i].offset, b.args[i].offset) << i;
    EXPECT_EQ(a.args[i].size, b.args[i].size) << i;
    EXPECT_EQ(a.args[i].value_kind, b.args[i].value_kind) << i;
  }
}

// ---------------------------------------------------------------------------------------------
// llvm-readelf --notes, parsed from its YAML rendering of the metadata. Indentation is learnt
// from the first list item at each level rather than assumed.

struct ReadelfArg {
  std::map<std::string, std::string> kv;
};
struct ReadelfKernel {
  std::map<std::string, std::string> kv;
  std::vector<ReadelfArg> args;
};
struct ReadelfNotes {
  std::string target;
  std::vector<ReadelfKernel> kernels;
};

std::string unquote(std::string v) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
  const size_t first = v.find_first_not_of(' ');
  v = first == std::string::npos ? std::string() : v.substr(first);
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) {
    v = v.substr(1, v.size() - 2);
  }
  return v;
}

ReadelfNotes parse_readelf_notes(const std::string& text) {
  ReadelfNotes out;
  bool in_kernels = false, in_args = false;
  size_t kernel_col = std::string::npos, arg_col = std::string::npos;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    size_t col = line.find_first_not_of(' ');
    if (col == std::string::npos) continue;
    bool item = false;
    if (line.compare(col, 2, "- ") == 0) {
      item = true;
      col = line.find_first_not_of(' ', col + 1);
      if (col == std::string::npos) continue;
    }
    const size_t colon = line.find(':', col);
    const std::string key =
        line.substr(col, colon == std::string::npos ? std::string::npos : colon - col);
    const std::string value = colon == std::string::npos ? "" : unquote(line.substr(colon + 1));
    if (col == 0 && key.rfind("amdhsa.", 0) == 0) {
      in_kernels = key == "amdhsa.kernels";
      in_args = false;
      if (key == "amdhsa.target") out.target = value;
      continue;
    }
    if (!in_kernels || colon == std::string::npos) continue;
    if (item && kernel_col == std::string::npos) kernel_col = col;
    if (item && col == kernel_col) {
      out.kernels.emplace_back();
      in_args = false;
    }
    if (out.kernels.empty()) continue;
    ReadelfKernel& k = out.kernels.back();
    if (col == kernel_col) {
      in_args = key == ".args";
      k.kv[key] = value;
      continue;
    }
    if (!in_args) continue;
    if (item && arg_col == std::string::npos) arg_col = col;
    if (item && col == arg_col) k.args.emplace_back();
    if (col == arg_col && !k.args.empty()) k.args.back().kv[key] = value;
  }
  return out;
}

// Runs llvm-readelf at test time; empty string on failure.
std::string run_readelf(std::string_view readelf, std::string_view file) {
  const std::string cmd =
      "'" + std::string(readelf) + "' --notes '" + std::string(file) + "' 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  return pclose(pipe) == 0 ? out : std::string();
}

uint32_t to_u32(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  EXPECT_NE(it, kv.end()) << "llvm-readelf printed no " << key;
  return it == kv.end() ? 0 : static_cast<uint32_t>(std::stoul(it->second));
}
std::string to_str(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  return it == kv.end() ? std::string() : it->second;
}

// The probe object compiled at build time, or a skip reason.
class ProbeObject : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kProbeCo.empty()) {
      GTEST_SKIP() << "no probe code object: clang++-22 was not found at configure time "
                      "(JAX_AITER_CLANG empty)";
    }
    bytes_ = read_file(std::string(kProbeCo));
    ASSERT_FALSE(bytes_.empty()) << "cannot read " << kProbeCo;
  }
  std::span<const std::byte> span() const { return bytes_; }
  Bytes bytes_;
};

// ---------------------------------------------------------------------------------------------
// (a) Real gfx950 objects against llvm-readelf-22: the probe, and our RMSNorm kernels as shipped.

struct ReadelfAgreement {
  size_t kernels = 0;
  bool saw_hidden = false, saw_gap = false;
};

// Every field our reader reports for `file` equals what llvm-readelf --notes prints for it.
ReadelfAgreement expect_matches_readelf(std::string_view file, std::span<const std::byte> bytes) {
  ReadelfAgreement seen;
  const std::string text = run_readelf(kReadelf, file);
  EXPECT_FALSE(text.empty()) << "running " << kReadelf << " --notes " << file << " failed";
  const ReadelfNotes want = parse_readelf_notes(text);
  EXPECT_FALSE(want.kernels.empty()) << "could not parse llvm-readelf output:\n" << text;

  auto got = read_code_object(bytes);
  EXPECT_TRUE(got.ok()) << got.status().message();
  if (!got.ok()) return seen;
  EXPECT_EQ(got->target, want.target);
  EXPECT_NE(got->target.find("gfx950"), std::string::npos);
  EXPECT_EQ(got->kernels.size(), want.kernels.size());
  if (got->kernels.size() != want.kernels.size()) return seen;
  seen.kernels = want.kernels.size();

  for (size_t i = 0; i < want.kernels.size(); ++i) {
    const ReadelfKernel& w = want.kernels[i];
    const KernelMetadata& g = got->kernels[i];
    SCOPED_TRACE(g.name);
    EXPECT_EQ(g.name, to_str(w.kv, ".name"));
    EXPECT_EQ(g.symbol, to_str(w.kv, ".symbol"));
    EXPECT_EQ(g.kernarg_segment_size, to_u32(w.kv, ".kernarg_segment_size"));
    EXPECT_EQ(g.kernarg_segment_align, to_u32(w.kv, ".kernarg_segment_align"));
    EXPECT_EQ(g.group_segment_fixed_size, to_u32(w.kv, ".group_segment_fixed_size"));
    EXPECT_EQ(g.private_segment_fixed_size, to_u32(w.kv, ".private_segment_fixed_size"));
    EXPECT_EQ(g.wavefront_size, to_u32(w.kv, ".wavefront_size"));
    EXPECT_EQ(g.args.size(), w.args.size());
    if (g.args.size() != w.args.size()) continue;
    uint32_t explicit_end = 0;
    for (size_t j = 0; j < w.args.size(); ++j) {
      SCOPED_TRACE(j);
      const auto& wa = w.args[j].kv;
      const KernelArgMetadata& ga = g.args[j];
      EXPECT_EQ(ga.name, to_str(wa, ".name"));  // hidden args have none
      EXPECT_EQ(ga.offset, to_u32(wa, ".offset"));
      EXPECT_EQ(ga.size, to_u32(wa, ".size"));
      EXPECT_EQ(ga.value_kind, to_str(wa, ".value_kind"));
      EXPECT_EQ(ga.hidden(), to_str(wa, ".value_kind").rfind("hidden_", 0) == 0);
      if (!ga.hidden()) {
        EXPECT_FALSE(ga.name.empty()) << "-fhip-kernel-arg-name should name every explicit arg";
        explicit_end = std::max(explicit_end, to_u32(wa, ".offset") + to_u32(wa, ".size"));
      }
      seen.saw_hidden = seen.saw_hidden || ga.hidden();
      if (j > 0 && !ga.hidden() && !g.args[j - 1].hidden()) {
        seen.saw_gap = seen.saw_gap || g.args[j - 1].offset + g.args[j - 1].size < ga.offset;
      }
    }
    EXPECT_EQ(g.explicit_kernarg_bytes(), explicit_end);
    // find() resolves by name, by symbol, and by symbol without ".kd".
    EXPECT_EQ(got->find(g.name), &g);
    EXPECT_EQ(got->find(g.symbol), &g);
  }
  EXPECT_EQ(got->find("no_such_kernel"), nullptr);
  return seen;
}

TEST_F(ProbeObject, MatchesLlvmReadelf) {
  if (kReadelf.empty()) {
    GTEST_SKIP() << "llvm-readelf-22 was not found at configure time (JAX_AITER_LLVM_READELF "
                    "empty)";
  }
  const ReadelfAgreement seen = expect_matches_readelf(kProbeCo, span());
  EXPECT_GE(seen.kernels, 4u);
  // The probe is meant to exercise both; if the compiler stops producing them, the test is weaker.
  EXPECT_TRUE(seen.saw_hidden) << "no kernel of the probe has hidden arguments";
  EXPECT_TRUE(seen.saw_gap) << "no kernel of the probe has an alignment gap between arguments";
}

// Our RMSNorm code object as jax_aiter_embed_kernels() builds it for gfx950: llvm-readelf and our
// reader agree on every kernel, and every kernel of the table (kRmsNormKernels) passes the kernarg
// check against the argument struct it is launched with.
TEST(RmsNormGfx950, MatchesLlvmReadelfAndOurStructs) {
  if (kRmsNormCo.empty() || kReadelf.empty()) {
    GTEST_SKIP() << "clang++-22 or llvm-readelf-22 was not found at configure time";
  }
  const Bytes bytes = read_file(std::string(kRmsNormCo));
  ASSERT_FALSE(bytes.empty()) << "cannot read " << kRmsNormCo;
  const ReadelfAgreement seen = expect_matches_readelf(kRmsNormCo, bytes);
  EXPECT_EQ(seen.kernels, jax_aiter::kernels::kRmsNormKernels.size());
  auto got = read_code_object(bytes);
  ASSERT_TRUE(got.ok()) << got.status().message();
  for (const KernelInfo* kernel : jax_aiter::kernels::kRmsNormKernels) {
    const KernelInfo& k = *kernel;
    SCOPED_TRACE(k.symbol);
    EXPECT_EQ(k.code_object, "rmsnorm");
    const KernelMetadata* md = got->find(k.symbol);
    ASSERT_NE(md, nullptr);
    const Status st = check_kernel_arguments(*md, k);
    EXPECT_TRUE(st.ok()) << st.message();
  }
}

// Host mirrors of the probe kernels' parameter lists: host and kernarg layouts agree for these
// types, so this is exactly how an op would describe its argument struct.
struct ProbeAxpyArgs {
  float* y;
  const float* x;
  float alpha;
  int n;
};
struct ProbePair {
  float a;
  int b;
};
struct ProbeMixedArgs {
  int flag;
  long long count;
  double* out;
  unsigned short tag;
  ProbePair pair;
};
struct ProbeHiddenArgs {
  float* out;
  int n;
};

template <typename Args, size_t N>
KernelInfo info_of(std::string_view symbol, const std::array<ArgField, N>& fields) {
  return {"probe", symbol, sizeof(Args), fields};
}

TEST_F(ProbeObject, OurMirrorStructsPassTheKernargCheck) {
  auto got = read_code_object(span());
  ASSERT_TRUE(got.ok()) << got.status().message();

  static constexpr std::array<ArgField, 4> kAxpy = {
      JAX_AITER_ARG_FIELD(ProbeAxpyArgs, y), JAX_AITER_ARG_FIELD(ProbeAxpyArgs, x),
      JAX_AITER_ARG_FIELD(ProbeAxpyArgs, alpha), JAX_AITER_ARG_FIELD(ProbeAxpyArgs, n)};
  static constexpr std::array<ArgField, 5> kMixed = {
      JAX_AITER_ARG_FIELD(ProbeMixedArgs, flag), JAX_AITER_ARG_FIELD(ProbeMixedArgs, count),
      JAX_AITER_ARG_FIELD(ProbeMixedArgs, out),
      // A 16-bit scalar and a struct by value: JAX_AITER_ARG_FIELD takes only the kinds our kernels
      // use (pointers, float, 32/64-bit integers), so these two are written out; the check reads
      // offsets and sizes only.
      ArgField{"tag", offsetof(ProbeMixedArgs, tag), sizeof(unsigned short), ArgKind::kU32},
      ArgField{"pair", offsetof(ProbeMixedArgs, pair), sizeof(ProbePair), ArgKind::kU64}};
  static constexpr std::array<ArgField, 2> kHidden = {JAX_AITER_ARG_FIELD(ProbeHiddenArgs, out),
                                                      JAX_AITER_ARG_FIELD(ProbeHiddenArgs, n)};
  const KernelMetadata* axpy = got->find("probe_axpy");
  const KernelMetadata* mixed = got->find("probe_mixed.kd");
  const KernelMetadata* hidden = got->find("probe_hidden");
  ASSERT_NE(axpy, nullptr);
  ASSERT_NE(mixed, nullptr);
  ASSERT_NE(hidden, nullptr);
  auto st = check_kernel_arguments(*axpy, info_of<ProbeAxpyArgs>("probe_axpy", kAxpy));
  EXPECT_TRUE(st.ok()) << st.message();
  st = check_kernel_arguments(*mixed, info_of<ProbeMixedArgs>("probe_mixed", kMixed));
  EXPECT_TRUE(st.ok()) << st.message();
  // Only the explicit part of probe_hidden's segment comes from our struct.
  ASSERT_GT(hidden->kernarg_segment_size, sizeof(ProbeHiddenArgs));
  st = check_kernel_arguments(*hidden, info_of<ProbeHiddenArgs>("probe_hidden", kHidden));
  EXPECT_TRUE(st.ok()) << st.message();
  // Mismatched pairing: axpy's struct against the mixed kernel.
  st = check_kernel_arguments(*mixed, info_of<ProbeAxpyArgs>("probe_mixed", kAxpy));
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
}

// ---------------------------------------------------------------------------------------------
// (b) Damaged input: errors, never crashes.

TEST_F(ProbeObject, EveryTruncationIsRefused) {
  ASSERT_TRUE(read_code_object(span()).ok());
  for (size_t len = 0; len < bytes_.size(); ++len) {
    expect_refused(read_code_object(span().first(len)), "truncated to " + std::to_string(len));
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST_F(ProbeObject, WrongMachineIsRefused) {
  Bytes b = bytes_;
  put_u16(b, 18, 0x3e);  // EM_X86_64
  auto r = read_code_object(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "jax_aiter: code object: e_machine 0x3e is not AMDGPU (0xe0)");
}

TEST_F(ProbeObject, WrongClassOrEncodingIsRefused) {
  Bytes b32 = bytes_;
  b32[4] = std::byte{1};  // ELFCLASS32
  auto r = read_code_object(b32);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  Bytes be = bytes_;
  be[5] = std::byte{2};  // ELFDATA2MSB
  r = read_code_object(be);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
}

// Finds the AMDGPU metadata note by its header, independently of the reader.
size_t find_note(const Bytes& b, uint32_t* total) {
  const std::string_view owner("AMDGPU\0", 8);  // namesz 7, padded to 8
  for (size_t i = 0; i + 20 <= b.size(); ++i) {
    if (get_u32(b, i) == 7 && get_u32(b, i + 8) == 32 &&
        std::memcmp(b.data() + i + 12, owner.data(), owner.size()) == 0) {
      *total = 20 + (get_u32(b, i + 4) + 3) / 4 * 4;
      return i;
    }
  }
  return std::string::npos;
}

TEST_F(ProbeObject, FlippedNoteBytesNeverCrash) {
  uint32_t total = 0;
  const size_t note = find_note(bytes_, &total);
  ASSERT_NE(note, std::string::npos);
  ASSERT_LE(note + total, bytes_.size());
  int refused = 0, accepted = 0;
  for (size_t i = note; i < note + total; ++i) {
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
      Bytes b = bytes_;
      b[i] ^= std::byte{mask};
      auto r = read_code_object(b);
      if (r.ok()) {
        ++accepted;  // e.g. a changed letter inside a name: still well-formed metadata
      } else {
        ++refused;
        expect_refused(r, "flip at " + std::to_string(i));
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(accepted, 0);
  // Corrupting the header fields specifically.
  for (size_t field : {size_t{0}, size_t{4}, size_t{8}}) {
    Bytes b = bytes_;
    put_u32(b, note + field, 0xffffffffu);
    expect_refused(read_code_object(b), "header field " + std::to_string(field));
  }
  Bytes b = bytes_;
  put_u32(b, note + 4, 0xfffffff0u);  // descsz past the segment
  auto r = read_code_object(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(r.status().message().find("note truncated at offset " + std::to_string(note)),
            std::string::npos)
      << r.status().message();
}

TEST_F(ProbeObject, FlippedHeaderBytesNeverCrash) {
  // The ELF header and the program header table, wherever e_phoff puts it.
  ASSERT_GE(bytes_.size(), 64u);
  uint64_t phoff = 0;
  for (int i = 0; i < 8; ++i)
    phoff |= uint64_t{std::to_integer<uint8_t>(bytes_[32 + i])} << (8 * i);
  const size_t phnum =
      std::to_integer<uint8_t>(bytes_[56]) | size_t{std::to_integer<uint8_t>(bytes_[57])} << 8;
  ASSERT_LE(phoff + phnum * 56, bytes_.size());
  const size_t end = std::max<size_t>(64, phoff + phnum * 56);
  for (size_t i = 0; i < end; ++i) {
    for (uint8_t mask : {0x01, 0x40, 0xff}) {
      Bytes b = bytes_;
      b[i] ^= std::byte{mask};
      auto r = read_code_object(b);
      if (!r.ok()) expect_refused(r, "flip at " + std::to_string(i));
    }
  }
}

TEST_F(ProbeObject, RandomCorruptionNeverCrashes) {
  std::mt19937 rng(20240611);  // fixed seed: failures reproduce
  std::uniform_int_distribution<size_t> pos(0, bytes_.size() - 1);
  std::uniform_int_distribution<int> val(0, 255), count(1, 16);
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = bytes_;
    for (int n = count(rng); n > 0; --n) b[pos(rng)] = std::byte(val(rng));
    auto r = read_code_object(b);
    if (!r.ok()) expect_refused(r, "iteration " + std::to_string(iter));
  }
}

TEST(CodeObject, NonElfIsRefused) {
  expect_refused(read_code_object({}), "empty");
  const Bytes text = to_bytes("this is not an ELF file at all, just some text for the reader");
  auto r = read_code_object(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  expect_refused(read_code_object(to_bytes("\x7f"
                                           "EL")),
                 "3 bytes");
  expect_refused(read_code_object(to_bytes("\x7f"
                                           "ELF")),
                 "magic only");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(0, 255);
  for (int iter = 0; iter < 200; ++iter) {
    Bytes b(static_cast<size_t>(iter) * 13);
    for (auto& x : b) x = std::byte(val(rng));
    if (b.size() >= 4)
      std::memcpy(b.data(),
                  "\x7f"
                  "ELF",
                  4);
    if (b.size() >= 19) {
      b[4] = std::byte{2};
      b[5] = std::byte{1};
      put_u16(b, 18, 0xe0);  // past the identification checks, into the tables
    }
    expect_refused(read_code_object(b), "random " + std::to_string(iter));
  }
}

// ---------------------------------------------------------------------------------------------
// Hand-built objects: every route to the note, every kind of malformed metadata.

TEST(CodeObject, DecodesHandBuiltMetadataFromSegmentOrSection) {
  const KernelMetadata k = sample_kernel();
  const Bytes payload = pack_metadata("amdgcn-amd-amdhsa--gfx942", {k});
  for (NoteIn where : {NoteIn::kSegment, NoteIn::kSection}) {
    auto r = read_code_object(metadata_elf(payload, where));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->target, "amdgcn-amd-amdhsa--gfx942");
    ASSERT_EQ(r->kernels.size(), 1u);
    expect_same(r->kernels[0], k);
    EXPECT_EQ(r->kernels[0].explicit_kernarg_bytes(), 16u);  // unnamed by_value arg counts
  }
}

TEST(CodeObject, SkipsOtherNotes) {
  const Bytes payload = pack_metadata("t", {sample_kernel()});
  Bytes notes = make_note("AMD", 1, to_bytes("\x02\x00\x00\x00"));  // a v2-era HSA note
  const Bytes gnu = make_note("GNU", 3, to_bytes("build-id"));
  const Bytes wrong_type = make_note("AMDGPU", 31, payload);  // right owner, other type
  const Bytes md = make_note("AMDGPU", 32, payload);
  for (const Bytes* n : {&gnu, &wrong_type, &md}) notes.insert(notes.end(), n->begin(), n->end());
  auto r = read_code_object(make_elf(notes));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->kernels.size(), 1u);
  EXPECT_EQ(r->kernels[0].name, "sample");
}

TEST(CodeObject, MissingNoteIsInvalidArgument) {
  const Bytes payload = pack_metadata("t", {sample_kernel()});
  for (const Bytes& notes :
       {Bytes{}, make_note("AMD", 32, payload), make_note("AMDGPU", 1, payload)}) {
    for (NoteIn where : {NoteIn::kSegment, NoteIn::kSection}) {
      auto r = read_code_object(make_elf(notes, where));
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find("no NT_AMDGPU_METADATA note"), std::string::npos)
          << r.status().message();
    }
  }
  auto r = read_code_object(make_elf(make_note("AMDGPU", 32, payload), NoteIn::kSegment, 0xf3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "jax_aiter: code object: e_machine 0xf3 is not AMDGPU (0xe0)");
}

TEST(CodeObject, TruncatedNoteIsDataLoss) {
  Bytes note = make_note("AMDGPU", 32, pack_metadata("t", {sample_kernel()}));
  put_u32(note, 4, get_u32(note, 4) + 64);  // descriptor claims more than the segment holds
  auto r = read_code_object(make_elf(note));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(r.status().message().find("note truncated at offset 176"), std::string::npos)
      << r.status().message();  // 64-byte header + 2 program headers
}

TEST(CodeObject, SegmentPastEndIsDataLoss) {
  Bytes b = metadata_elf(pack_metadata("t", {sample_kernel()}));
  put_u64(b, 64 + 56 + 32, b.size());  // PT_NOTE p_filesz: the whole file, from offset 176
  auto r = read_code_object(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss);
  put_u64(b, 64 + 56 + 8, ~uint64_t{0} - 3);  // p_offset near 2^64: no wrap-around
  put_u64(b, 64 + 56 + 32, 16);
  expect_refused(read_code_object(b), "huge p_offset");
  b = metadata_elf(pack_metadata("t", {sample_kernel()}));
  put_u16(b, 56, 0xffff);  // e_phnum far past the file
  expect_refused(read_code_object(b), "huge e_phnum");
}

Bytes pack_raw(void (*fill)(msgpack::packer<msgpack::sbuffer>&)) {
  msgpack::sbuffer sb;
  msgpack::packer<msgpack::sbuffer> pk(sb);
  fill(pk);
  return from_sbuffer(sb);
}

// One kernel map with one argument, where `bad` replaces a value with something malformed.
Bytes kernel_doc(std::string_view bad) {
  msgpack::sbuffer sb;
  msgpack::packer<msgpack::sbuffer> pk(sb);
  pk.pack_map(1);
  pack_str(pk, "amdhsa.kernels");
  pk.pack_array(1);
  pk.pack_map(4);
  pack_str(pk, ".name");
  if (bad == "name")
    pk.pack(7);
  else
    pack_str(pk, "k");
  pack_str(pk, ".symbol");
  pack_str(pk, "k.kd");
  pack_str(pk, bad == "no_size" ? ".kernarg_segment_sizex" : ".kernarg_segment_size");
  if (bad == "negative")
    pk.pack(-8);
  else if (bad == "big")
    pk.pack(uint64_t{1} << 32);
  else
    pk.pack(16);
  pack_str(pk, ".args");
  if (bad == "args") {
    pack_str(pk, "nope");
    return from_sbuffer(sb);
  }
  pk.pack_array(1);
  if (bad == "arg") {
    pk.pack(3);
    return from_sbuffer(sb);
  }
  pk.pack_map(bad == "no_offset" ? 2 : 3);
  if (bad != "no_offset") {
    pack_str(pk, ".offset");
    if (bad == "offset_str")
      pack_str(pk, "0");
    else
      pk.pack(0);
  }
  pack_str(pk, ".size");
  pk.pack(8);
  pack_str(pk, ".value_kind");
  if (bad == "kind")
    pk.pack_nil();
  else
    pack_str(pk, "global_buffer");
  return from_sbuffer(sb);
}

TEST(CodeObject, MalformedMetadataIsDataLoss) {
  {
    auto r = read_code_object(metadata_elf(kernel_doc("")));
    ASSERT_TRUE(r.ok()) << r.status().message();  // the unspoilt document decodes
    EXPECT_EQ(r->target, "");                     // v3 objects have no amdhsa.target
    ASSERT_EQ(r->kernels.size(), 1u);
    EXPECT_EQ(r->kernels[0].args.size(), 1u);
  }
  for (std::string_view bad :
       {"name", "no_size", "negative", "big", "args", "arg", "no_offset", "offset_str", "kind"}) {
    auto r = read_code_object(metadata_elf(kernel_doc(bad)));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss) << bad;
    EXPECT_NE(r.status().message().find("metadata: kernel 0"), std::string::npos)
        << r.status().message();
  }
  const std::vector<Bytes> docs = {
      Bytes{},                                       // empty descriptor
      to_bytes("\xc1"),                              // reserved byte
      to_bytes("\x82\xa1"),                          // cut short
      pack_raw([](auto& pk) { pk.pack_array(0); }),  // root not a map
      pack_raw([](auto& pk) { pk.pack_map(0); }),    // no amdhsa.kernels
      pack_raw([](auto& pk) {
        pk.pack_map(1);
        pack_str(pk, "amdhsa.kernels");
        pk.pack(1);
      }),
      pack_raw([](auto& pk) {
        pk.pack_map(1);
        pack_str(pk, "amdhsa.target");
        pk.pack(1);
      }),
      to_bytes(std::string_view("\xdd\xff\xff\xff\xff", 5)),  // forged 4G-element array
      to_bytes(std::string_view("\xdf\xff\xff\xff\xff", 5)),  // forged 4G-entry map
      to_bytes(std::string_view("\xdb\xff\xff\xff\xf0"
                                "abc",
                                8)),        // forged 4 GB string
      to_bytes(std::string(5000, '\x91')),  // 5000 nested arrays
  };
  for (size_t i = 0; i < docs.size(); ++i) {
    auto r = read_code_object(metadata_elf(docs[i]));
    ASSERT_FALSE(r.ok()) << "doc " << i;
    EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss)
        << "doc " << i << ": " << r.status().message();
  }
}

TEST(CodeObject, MetadataNoteTruncatedAtEveryLength) {
  const Bytes payload =
      pack_metadata("amdgcn-amd-amdhsa--gfx950", {sample_kernel(), sample_kernel()});
  for (size_t len = 0; len < payload.size(); ++len) {
    const Bytes cut(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(len));
    auto r = read_code_object(metadata_elf(cut));
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_EQ(r.status().code(), ErrorCode::kDataLoss) << len;
  }
}

TEST(CodeObject, FindMatchesNameOrSymbol) {
  CodeObjectInfo info;
  info.kernels.resize(3);
  info.kernels[0].name = "alpha";
  info.kernels[0].symbol = "alpha.kd";
  info.kernels[1].name = "beta";
  info.kernels[1].symbol = "_Z4betav.kd";
  info.kernels[2].name = "gamma";
  info.kernels[2].symbol = "gamma_sym";  // no ".kd": matched only as written
  EXPECT_EQ(info.find("alpha"), &info.kernels[0]);
  EXPECT_EQ(info.find("alpha.kd"), &info.kernels[0]);
  EXPECT_EQ(info.find("beta"), &info.kernels[1]);
  EXPECT_EQ(info.find("_Z4betav"), &info.kernels[1]);
  EXPECT_EQ(info.find("_Z4betav.kd"), &info.kernels[1]);
  EXPECT_EQ(info.find("gamma_sym"), &info.kernels[2]);
  EXPECT_EQ(info.find("gamma_sym.kd"), nullptr);
  EXPECT_EQ(info.find("beta.kd"), nullptr);
  EXPECT_EQ(info.find(""), nullptr);
  EXPECT_EQ(info.find(".kd"), nullptr);
}

TEST(CodeObject, ExplicitKernargBytes) {
  KernelMetadata k;
  EXPECT_EQ(k.explicit_kernarg_bytes(), 0u);
  k.args = {{"", 0, 8, "hidden_block_count_x"}};
  EXPECT_EQ(k.explicit_kernarg_bytes(), 0u);
  k.args = {{"a", 0, 8, "global_buffer"}, {"b", 8, 4, "by_value"}, {"", 16, 4, "hidden_x"}};
  EXPECT_EQ(k.explicit_kernarg_bytes(), 12u);
  EXPECT_TRUE(k.args[2].hidden());
  EXPECT_FALSE(k.args[1].hidden());
  k.args = {{"a", 0xfffffff0u, 0x100, "by_value"}};  // garbage: saturates, never wraps small
  EXPECT_EQ(k.explicit_kernarg_bytes(), 0xffffffffu);
}

// ---------------------------------------------------------------------------------------------
// (c) check_kernel_arguments.

KernelMetadata simple_md() {
  KernelMetadata k;
  k.name = "simple";
  k.symbol = "simple.kd";
  k.kernarg_segment_size = 24;
  k.args = {{"out", 0, 8, "global_buffer"},
            {"in", 8, 8, "global_buffer"},
            {"n", 16, 4, "by_value"},
            {"pad", 20, 4, "by_value"}};
  return k;
}

constexpr std::array<ArgField, 3> kSimpleFields = {ArgField{"out", 0, 8, ArgKind::kPointer},
                                                   ArgField{"in", 8, 8, ArgKind::kPointer},
                                                   ArgField{"n", 16, 4, ArgKind::kI32}};

TEST(KernargCheck, AcceptsExactMatch) {
  const KernelInfo ours{"test", "simple", 24, kSimpleFields};
  auto st = check_kernel_arguments(simple_md(), ours);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(KernargCheck, RefusesSmallerStruct) {
  const KernelInfo ours{"test", "simple", 20, kSimpleFields};
  auto st = check_kernel_arguments(simple_md(), ours);
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "jax_aiter: kernel simple declares a 24-byte kernarg segment but our argument struct "
            "has 20 bytes");
}

TEST(KernargCheck, RefusesMovedOffset) {
  constexpr std::array<ArgField, 3> moved = {ArgField{"out", 0, 8, ArgKind::kPointer},
                                             ArgField{"in", 8, 8, ArgKind::kPointer},
                                             ArgField{"n", 20, 4, ArgKind::kI32}};
  auto st = check_kernel_arguments(simple_md(), KernelInfo{"test", "simple", 24, moved});
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "jax_aiter: kernel simple: argument 'n': expected offset 16 size 4 (code object), "
            "got offset 20 size 4 (our struct)");
  constexpr std::array<ArgField, 3> resized = {ArgField{"out", 0, 8, ArgKind::kPointer},
                                               ArgField{"in", 8, 4, ArgKind::kI32},
                                               ArgField{"n", 16, 4, ArgKind::kI32}};
  st = check_kernel_arguments(simple_md(), KernelInfo{"test", "simple", 24, resized});
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("argument 'in'"), std::string::npos) << st.message();
}

TEST(KernargCheck, RefusesMissingField) {
  constexpr std::array<ArgField, 2> fields = {ArgField{"out", 0, 8, ArgKind::kPointer},
                                              ArgField{"n", 16, 4, ArgKind::kI32}};
  auto st = check_kernel_arguments(simple_md(), KernelInfo{"test", "simple", 24, fields});
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(st.message(),
            "jax_aiter: kernel simple: argument 'in' (offset 8, size 8) is not a field of our "
            "argument struct");
}

TEST(KernargCheck, AcceptsExtraTrailingField) {
  constexpr std::array<ArgField, 4> fields = {
      ArgField{"out", 0, 8, ArgKind::kPointer}, ArgField{"in", 8, 8, ArgKind::kPointer},
      ArgField{"n", 16, 4, ArgKind::kI32}, ArgField{"extra", 24, 8, ArgKind::kPointer}};
  auto st = check_kernel_arguments(simple_md(), KernelInfo{"test", "simple", 32, fields});
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(KernargCheck, HiddenArgumentsNeedNotBeInOurStruct) {
  KernelMetadata k = simple_md();
  k.args.resize(3);  // out, in, n: explicit part ends at 20
  k.kernarg_segment_size = 280;
  k.args.push_back({"", 24, 4, "hidden_block_count_x"});
  k.args.push_back({"", 32, 8, "hidden_global_offset_x"});
  auto st = check_kernel_arguments(k, KernelInfo{"test", "simple", 24, kSimpleFields});
  EXPECT_TRUE(st.ok()) << st.message();
  st = check_kernel_arguments(k, KernelInfo{"test", "simple", 16, kSimpleFields});
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("declares 20 bytes of explicit arguments (of a 280-byte kernarg "
                              "segment) but our argument struct has 16 bytes"),
            std::string::npos)
      << st.message();
}

// AITER's BF16 GEMM ABI: each argument in a 16-byte slot, named as AITER's metadata names it.
struct GemmBf16Args {
  void* D;
  char p0[8];
  void* C;
  char p1[8];
  void* A;
  char p2[8];
  void* B;
  char p3[8];
  float alpha;
  char p4[12];
  float beta;
  char p5[12];
  uint32_t strideD0;
  char p6[12];
  uint32_t strideD1;
  char p7[12];
  uint32_t strideC0;
  char p8[12];
  uint32_t strideC1;
  char p9[12];
  uint32_t strideA0;
  char p10[12];
  uint32_t strideA1;
  char p11[12];
  uint32_t strideB0;
  char p12[12];
  uint32_t strideB1;
  char p13[12];
  uint32_t Mdim;
  char p14[12];
  uint32_t Ndim;
  char p15[12];
  uint32_t Kdim;
  char p16[12];
  uint32_t splitk;
  char p17[12];
  uint32_t is_out_b16;
  char p18[12];
  void* Bias;
  char p19[8];
  uint32_t add_bias;
  char p20[12];
  void* ptr_semaphore;
  char p21[8];
};
static_assert(sizeof(GemmBf16Args) == 352);

#define GEMM_FIELD(m) JAX_AITER_ARG_FIELD(GemmBf16Args, m)
constexpr std::array<ArgField, 22> kGemmFields = {
    GEMM_FIELD(D),          GEMM_FIELD(C),
    GEMM_FIELD(A),          GEMM_FIELD(B),
    GEMM_FIELD(alpha),      GEMM_FIELD(beta),
    GEMM_FIELD(strideD0),   GEMM_FIELD(strideD1),
    GEMM_FIELD(strideC0),   GEMM_FIELD(strideC1),
    GEMM_FIELD(strideA0),   GEMM_FIELD(strideA1),
    GEMM_FIELD(strideB0),   GEMM_FIELD(strideB1),
    GEMM_FIELD(Mdim),       GEMM_FIELD(Ndim),
    GEMM_FIELD(Kdim),       GEMM_FIELD(splitk),
    GEMM_FIELD(is_out_b16), GEMM_FIELD(Bias),
    GEMM_FIELD(add_bias),   GEMM_FIELD(ptr_semaphore)};
#undef GEMM_FIELD

// Metadata as AITER's code objects declare it (DESIGN.md section 3): named arguments with "pad"
// entries filling each 16-byte slot; gfx942 pf3_splitk stops at 336, gfx950 adds the semaphore.
KernelMetadata aiter_bf16_gemm_md(bool with_semaphore) {
  struct Row {
    const char* name;
    uint32_t offset, size;
  };
  static constexpr Row kRows[] = {{"D", 0, 8},
                                  {"C", 16, 8},
                                  {"A", 32, 8},
                                  {"B", 48, 8},
                                  {"alpha", 64, 4},
                                  {"beta", 80, 4},
                                  {"strideD0", 96, 4},
                                  {"strideD1", 112, 4},
                                  {"strideC0", 128, 4},
                                  {"strideC1", 144, 4},
                                  {"strideA0", 160, 4},
                                  {"strideA1", 176, 4},
                                  {"strideB0", 192, 4},
                                  {"strideB1", 208, 4},
                                  {"Mdim", 224, 4},
                                  {"Ndim", 240, 4},
                                  {"Kdim", 256, 4},
                                  {"splitk", 272, 4},
                                  {"is_out_b16", 288, 4},
                                  {"Bias", 304, 8},
                                  {"add_bias", 320, 4},
                                  {"ptr_semaphore", 336, 8}};
  KernelMetadata k;
  k.name = with_semaphore ? "_ZN5aiter24bf16gemm_bf16_tn_256x256E"
                          : "_ZN5aiter30bf16gemm_bf16_tn_128x128_pf3_splitkE";
  k.symbol = k.name + ".kd";
  k.kernarg_segment_size = with_semaphore ? 352 : 336;
  for (const Row& r : kRows) {
    if (!with_semaphore && std::string_view(r.name) == "ptr_semaphore") break;
    const bool ptr = r.size == 8;
    k.args.push_back({r.name, r.offset, r.size, ptr ? "global_buffer" : "by_value"});
    k.args.push_back({"pad", r.offset + r.size, 16 - r.size, "by_value"});
  }
  return k;
}

TEST(KernargCheck, AiterBf16GemmMetadataIsNotUniform) {
  const KernelMetadata gfx942 = aiter_bf16_gemm_md(false);
  const KernelMetadata gfx950 = aiter_bf16_gemm_md(true);
  ASSERT_EQ(gfx942.explicit_kernarg_bytes(), 336u);
  ASSERT_EQ(gfx950.explicit_kernarg_bytes(), 352u);

  // Our 352-byte struct serves both: the gfx942 kernel never reads ptr_semaphore.
  const KernelInfo ours352{"test", "bf16gemm", sizeof(GemmBf16Args), kGemmFields};
  auto st = check_kernel_arguments(gfx942, ours352);
  EXPECT_TRUE(st.ok()) << st.message();
  st = check_kernel_arguments(gfx950, ours352);
  EXPECT_TRUE(st.ok()) << st.message();

  // A 336-byte struct (no semaphore) fits gfx942 but would let gfx950 read 16 stray bytes.
  const KernelInfo ours336{"test", "bf16gemm", 336, std::span(kGemmFields).first(21)};
  st = check_kernel_arguments(gfx942, ours336);
  EXPECT_TRUE(st.ok()) << st.message();
  st = check_kernel_arguments(gfx950, ours336);
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "jax_aiter: kernel " + gfx950.name +
                              " declares a 352-byte kernarg segment but our argument struct "
                              "has 336 bytes");
  // Same size, semaphore missing from our field list: named as the culprit.
  st = check_kernel_arguments(
      gfx950, KernelInfo{"test", "bf16gemm", 352, std::span(kGemmFields).first(21)});
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("argument 'ptr_semaphore' (offset 336, size 8)"), std::string::npos)
      << st.message();

  // The metadata round-trips through a code object unchanged, pads and all.
  auto r = read_code_object(metadata_elf(pack_metadata("amdgcn-amd-amdhsa--gfx950", {gfx950})));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_NE(r->find(gfx950.name), nullptr);
  st = check_kernel_arguments(*r->find(gfx950.symbol), ours352);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(KernargCheck, PaddingNamesAreSkipped) {
  KernelMetadata k = simple_md();
  k.args.push_back({"pad7", 20, 4, "by_value"});
  k.args.push_back({"", 20, 4, "by_value"});
  auto st = check_kernel_arguments(k, KernelInfo{"test", "simple", 24, kSimpleFields});
  EXPECT_TRUE(st.ok()) << st.message();
  k.args.push_back({"padding_value", 20, 4, "by_value"});  // a real argument, not padding
  st = check_kernel_arguments(k, KernelInfo{"test", "simple", 24, kSimpleFields});
  EXPECT_EQ(st.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("'padding_value'"), std::string::npos) << st.message();
}

}  // namespace
