// The AITER the user has: its argument structs change between versions, with its code objects
// rebuilt to match, so a family keeps the layouts it knows (kernels::AbiVariant) and the loader
// picks the one a code object's own metadata declares (runtime/kernarg_check.hpp
// match_kernel_abi), or refuses it saying why; jax-aiter-check-aiter reports which one each code
// object matched (runtime/check_aiter.hpp).
//
// Fixtures: synthetic code objects (tests/cpp/code_object_builder.hpp) whose metadata restates
// what AITER's own code objects declare in two versions, ROCm/jax-aiter's pin 3baf198aa7b6
// (2026-03-06) and ours e4048607a535 (2026-08-22), read with llvm-readelf --notes from each
// version's hsa/ (github.com/ROCm/aiter): the v3 backward's odo pass changed (208 bytes with one
// set of o / do strides, then 256 with separate ones, 17d4a33b6f); the BF16 GEMM did not (gfx942
// pf3_splitk kernels declare 336 bytes in both, the splitk_clean ones 352).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "code_object_builder.hpp"
#include "jax_aiter/kernels/aiter/bf16gemm.hpp"
#include "jax_aiter/kernels/aiter/fmha_v3.hpp"
#include "jax_aiter/runtime/check_aiter.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"

namespace {

namespace fs = std::filesystem;
namespace kn = jax_aiter::kernels;
using jax_aiter::ErrorCode;
using jax_aiter::runtime::AiterCheck;
using jax_aiter::runtime::KernelMetadata;
using jax_aiter::runtime::match_kernel_abi;
using namespace code_object_builder;

struct Arg {
  const char* name;
  uint32_t offset, size;
};

// Metadata laid out as AITER's hand-written kernels declare it: each argument in its 16-byte slot,
// the rest of the slot "pad" entries (pointers to sequence starts are 4-byte by_value there).
KernelMetadata aiter_md(std::string_view symbol, uint32_t kernarg,
                        std::initializer_list<Arg> args) {
  KernelMetadata k;
  k.name = std::string(symbol);
  k.symbol = k.name + ".kd";
  k.kernarg_segment_size = kernarg;
  for (const Arg& a : args) {
    const bool buffer = a.size == 8;
    k.args.push_back({a.name, a.offset, a.size, buffer ? "global_buffer" : "by_value"});
    for (uint32_t at = a.offset + a.size; at < a.offset + 16; at += buffer ? 8 : 4) {
      k.args.push_back({"pad", at, buffer ? 8u : 4u, "by_value"});
    }
  }
  return k;
}

// The odo pass of one AITER version.
KernelMetadata odo_md(std::string_view version, std::string_view symbol) {
  if (version == "3baf198aa7b6") {
    return aiter_md(symbol, 208,
                    {{"O", 0, 8},
                     {"dO", 16, 8},
                     {"D", 32, 8},
                     {"Hs_odo", 48, 4},
                     {"BAs_odo", 64, 4},
                     {"Seqs_odo", 80, 4},
                     {"Hs_d", 96, 4},
                     {"BAs_d", 112, 4},
                     {"Seqs_d", 128, 4},
                     {"seqlen_q", 144, 4},
                     {"head_dim", 160, 4},
                     {"ptr_seqstart_q", 176, 4},
                     {"ptr_seqstart_q_padded", 192, 4}});
  }
  return aiter_md(symbol, 256,
                  {{"O", 0, 8},
                   {"dO", 16, 8},
                   {"D", 32, 8},
                   {"Hs_o", 48, 4},
                   {"BAs_o", 64, 4},
                   {"Seqs_o", 80, 4},
                   {"Hs_do", 96, 4},
                   {"BAs_do", 112, 4},
                   {"Seqs_do", 128, 4},
                   {"Hs_d", 144, 4},
                   {"BAs_d", 160, 4},
                   {"Seqs_d", 176, 4},
                   {"seqlen_q", 192, 4},
                   {"head_dim", 208, 4},
                   {"ptr_seqstart_q", 224, 4},
                   {"ptr_seqstart_q_padded", 240, 4}});
}

// The BF16 GEMM (the same in both versions): gfx942 pf3_splitk rows stop before the semaphore.
KernelMetadata bf16gemm_md(std::string_view symbol, bool semaphore) {
  std::vector<Arg> args = {
      {"D", 0, 8},          {"C", 16, 8},         {"A", 32, 8},           {"B", 48, 8},
      {"alpha", 64, 4},     {"beta", 80, 4},      {"strideD0", 96, 4},    {"strideD1", 112, 4},
      {"strideC0", 128, 4}, {"strideC1", 144, 4}, {"strideA0", 160, 4},   {"strideA1", 176, 4},
      {"strideB0", 192, 4}, {"strideB1", 208, 4}, {"Mdim", 224, 4},       {"Ndim", 240, 4},
      {"Kdim", 256, 4},     {"splitk", 272, 4},   {"is_out_b16", 288, 4}, {"Bias", 304, 8},
      {"add_bias", 320, 4}};
  if (semaphore) args.push_back({"ptr_semaphore", 336, 8});
  KernelMetadata k = aiter_md(symbol, semaphore ? 352 : 336, {});
  for (const Arg& a : args) {
    const KernelMetadata one = aiter_md(symbol, 0, {a});
    k.args.insert(k.args.end(), one.args.begin(), one.args.end());
  }
  return k;
}

// The metadata as it comes back from a code object's bytes.
KernelMetadata round_trip(const KernelMetadata& md) {
  auto info = jax_aiter::runtime::read_code_object(
      metadata_elf(pack_metadata("amdgcn-amd-amdhsa--gfx942", {md})));
  EXPECT_TRUE(info.ok()) << info.status().message();
  return info.ok() && info->find(md.name) ? *info->find(md.name) : KernelMetadata{};
}

const kn::AiterFmhaBwdRow& an_odo_row() { return kn::kAiterFmhaBwdOdoRows[0]; }

TEST(AiterVersions, EachOdoLayoutIsPickedFromItsCodeObject) {
  const kn::KernelInfo& odo = an_odo_row().kernel;
  ASSERT_EQ(odo.abi, "odo-256");
  ASSERT_EQ(odo.variants.size(), 1u);
  const auto ours = match_kernel_abi(round_trip(odo_md("e4048607a535", odo.symbol)), odo);
  ASSERT_TRUE(ours.ok()) << ours.status().message();
  EXPECT_EQ(*ours, nullptr);  // the layout our plans pack
  const auto old = match_kernel_abi(round_trip(odo_md("3baf198aa7b6", odo.symbol)), odo);
  ASSERT_TRUE(old.ok()) << old.status().message();
  ASSERT_NE(*old, nullptr);
  EXPECT_EQ(*old, &odo.variants[0]);
  EXPECT_EQ((*old)->args_size, 208u);
  // A layout we do not know (a later AITER moving head_dim): refused, with each layout's reason.
  KernelMetadata later = odo_md("e4048607a535", odo.symbol);
  for (auto& a : later.args) {
    if (a.name == "head_dim") a.offset = 212;
  }
  const auto none = match_kernel_abi(later, odo);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), ErrorCode::kFailedPrecondition);
  const std::string why = none.status().message();
  EXPECT_NE(why.find("declares none of the argument layouts we know"), std::string::npos) << why;
  EXPECT_NE(why.find("odo-256: "), std::string::npos) << why;
  EXPECT_NE(why.find("odo-208 (AITER before 17d4a33b6f"), std::string::npos) << why;
  // A family with one layout keeps its one reason, as before.
  const kn::KernelInfo& gemm = kn::kAiterBf16GemmRows[1].kernel;
  KernelMetadata moved = bf16gemm_md(gemm.symbol, false);
  for (auto& a : moved.args) {
    if (a.name == "Kdim") a.offset = 272;
  }
  const auto gemm_none = match_kernel_abi(moved, gemm);
  ASSERT_FALSE(gemm_none.ok());
  EXPECT_NE(gemm_none.status().message().find("argument 'Kdim': expected offset 272"),
            std::string::npos)
      << gemm_none.status().message();
}

// The plan packs the current layout; a code object of the older one gets the same call in its.
TEST(AiterVersions, TheOldOdoLayoutCarriesThePlansArguments) {
  kn::AiterFmhaBwdOdoArgs a{};
  a.ptr_o = reinterpret_cast<const void*>(0x1000);
  a.ptr_do = reinterpret_cast<const void*>(0x2000);
  a.ptr_d = reinterpret_cast<float*>(0x3000);
  a.Hs_o = a.Hs_do = 256;
  a.BAs_o = a.BAs_do = 1 << 20;
  a.Seqs_o = a.Seqs_do = 2048;
  a.Hs_d = 4096;
  a.BAs_d = 1 << 16;
  a.Seqs_d = 4;
  a.seqlen_q = 1024;
  a.head_dim = 128;
  a.ptr_qseq = reinterpret_cast<const int*>(0x4000);
  a.ptr_qseq_padded = reinterpret_cast<const int*>(0x5000);
  kn::KernelArgs packed, out;
  packed.set(a);
  const kn::AbiVariant& v = an_odo_row().kernel.variants[0];
  ASSERT_TRUE(v.repack(packed, out));
  ASSERT_EQ(out.size, 208u);
  const auto b = out.unpack<kn::AiterFmhaBwdOdo208Args>();
  EXPECT_EQ(b.ptr_o.value, a.ptr_o.value);
  EXPECT_EQ(b.ptr_do.value, a.ptr_do.value);
  EXPECT_EQ(b.ptr_d.value, a.ptr_d.value);
  EXPECT_EQ(b.Hs_odo.value, 256u);
  EXPECT_EQ(b.BAs_odo.value, 1u << 20);
  EXPECT_EQ(b.Seqs_odo.value, 2048u);
  EXPECT_EQ(b.Hs_d.value, 4096u);
  EXPECT_EQ(b.BAs_d.value, 1u << 16);
  EXPECT_EQ(b.Seqs_d.value, 4u);
  EXPECT_EQ(b.seqlen_q.value, 1024u);
  EXPECT_EQ(b.head_dim.value, 128u);
  EXPECT_EQ(b.ptr_qseq.value, a.ptr_qseq.value);
  EXPECT_EQ(b.ptr_qseq_padded.value, a.ptr_qseq_padded.value);
  // Every field the old code object declares comes from the repacked bytes, at its offset.
  const auto md = round_trip(odo_md("3baf198aa7b6", an_odo_row().kernel.symbol));
  EXPECT_TRUE(jax_aiter::runtime::check_kernel_arguments(md, v.args_size, v.fields).ok());
  // o and do with different strides have no place in the old layout: refused, not mixed.
  a.Seqs_do = 4096;
  packed.set(a);
  EXPECT_FALSE(v.repack(packed, out));
}

// jax-aiter-check-aiter on fixture checkouts of the two versions: every odo code object matches,
// each reporting its version's layout; the BF16 GEMM's match the same layout in both.
TEST(AiterVersions, CheckAiterReportsTheLayoutOfEachVersion) {
  char tmpl[] = "/tmp/jax_aiter_abi_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const fs::path scratch = tmpl;
  for (std::string_view version : {"3baf198aa7b6", "e4048607a535"}) {
    const fs::path root = scratch / version;
    auto write = [&](std::string_view arch, const kn::KernelInfo& k, const KernelMetadata& md) {
      const fs::path p = root / "hsa" / arch / k.code_object;
      fs::create_directories(p.parent_path());
      const Bytes bytes = metadata_elf(pack_metadata("", {md}));
      std::ofstream(p, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    };
    int odo = 0, gemm = 0;
    for (const kn::AiterFmhaBwdRow& r : kn::kAiterFmhaBwdOdoRows) {
      write(jax_aiter::name(r.arch), r.kernel, odo_md(version, r.kernel.symbol));
      ++odo;
    }
    for (const kn::AiterBf16GemmRow& r : kn::kAiterBf16GemmRows) {
      if (!kn::on(r, jax_aiter::Arch::kGfx942)) continue;
      write("gfx942", r.kernel, bf16gemm_md(r.kernel.symbol, r.split_k));
      ++gemm;
    }
    const auto report = jax_aiter::runtime::check_aiter(root.string());
    ASSERT_TRUE(report.ok()) << report.status().message();
    int odo_ok = 0, gemm_ok = 0;
    for (const AiterCheck& c : *report) {
      if (c.result == AiterCheck::Result::kMissing) continue;
      ASSERT_EQ(c.result, AiterCheck::Result::kOk)
          << version << " " << c.code_object << ": " << c.detail;
      if (c.family == "fmha_v3_bwd") {
        ++odo_ok;
        const bool old = version == "3baf198aa7b6";
        EXPECT_EQ(c.abi, old ? "odo-208 (AITER before 17d4a33b6f, 2026-03-23)" : "odo-256");
        EXPECT_EQ(c.declared, old ? 208u : 256u);
      } else {
        ASSERT_EQ(c.family, "bf16gemm");
        ++gemm_ok;
        EXPECT_EQ(c.abi, "352-byte struct");
        EXPECT_TRUE(c.declared == 336u || c.declared == 352u) << c.declared;
      }
    }
    EXPECT_EQ(odo_ok, odo) << version;
    EXPECT_EQ(gemm_ok, gemm) << version;
    std::printf("AITER %s: %d odo code objects as %s, %d bf16gemm as 352-byte struct\n",
                std::string(version).c_str(), odo_ok,
                version == "3baf198aa7b6" ? "odo-208" : "odo-256", gemm_ok);
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
}

}  // namespace
