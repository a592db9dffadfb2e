// The grouped GEMM's device code that runs nowhere here, checked on the host:
//  - the staged tile's loader map (StagedChunks,
//  kernels_co/include/jax_aiter_grouped_gemm_tile.hpp)
//    for every operand layout the kernels instantiate: each 16-bit word of a stage is written by
//    exactly one chunk, with the word its source address holds, and the transposed stores of a
//    warp hit 32 distinct shared-memory banks (sm_90) or share a 4-byte word;
//  - the gfx942/gfx950 code objects (compiled at build time by the rule jax_aiter_embed_kernels
//    uses): every kernel of our tables is there, with exactly the argument layout our structs
//    pack, and no scratch.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "jax_aiter/kernels/grouped_gemm.hpp"
#include "jax_aiter_grouped_gemm_tile.hpp"

#if defined(JAX_AITER_TEST_GROUPED_GEMM_CO_GFX942)
#include "jax_aiter/runtime/code_object.hpp"
#include "jax_aiter/runtime/kernarg_check.hpp"
#endif

namespace {

using ja_major = ja::Major;

// Checks one operand's map: R rows from shared row kRow0, a k-tile of kRowBytes bytes.
template <int R, int kRow0, ja::Major kM, int kRowBytes, int kElemBytes, int THREADS>
void check_map() {
  using Map = ja::StagedChunks<R, kRow0, kM, kRowBytes, kElemBytes, THREADS>;
  using Layout = ja::TileLayout<kRowBytes / 2>;
  constexpr int kUnits = kRowBytes / 2;  // 16-bit words of a shared row
  constexpr int64_t kStride = 1 << 16;   // source bytes between rows (kRows) or steps (kCols)
  SCOPED_TRACE(::testing::Message() << "R " << R << " row0 " << kRow0 << " "
                                    << (kM == ja::Major::kRows ? "rows" : "cols") << " "
                                    << kRowBytes << " bytes, " << kElemBytes << "-byte elements");
  ASSERT_LE(Map::kPasses, 32);
  ASSERT_GE(Map::kPasses * THREADS, Map::kChunks);
  std::map<int, int> hits;  // stage offset -> writes
  for (int i = 0; i < Map::kChunks; ++i) {
    const int r = Map::row(i), c = Map::col(i);
    ASSERT_LT(r, R);
    const int64_t src = Map::source(r, c, 0, kStride);
    for (int e = 0; e < 8; ++e) {
      // The source word e of the chunk, decoded from its byte address.
      int row, unit;
      if constexpr (kM == ja::Major::kRows) {
        const int64_t byte = src + 2 * e;
        row = static_cast<int>(byte / kStride);
        unit = static_cast<int>(byte % kStride) / 2;
        EXPECT_EQ(Map::step(c), (byte % kStride) / kElemBytes - 2 * e / kElemBytes);
      } else {
        const int64_t byte = src + 2 * e;
        unit = static_cast<int>(byte / kStride);
        row = static_cast<int>(byte % kStride) / 2;
        EXPECT_EQ(Map::step(c), unit);
      }
      ASSERT_LT(row, R);
      ASSERT_LT(unit, kUnits);
      const int dest = Map::dest(r, c, e);
      EXPECT_EQ(dest, Layout::offset(kRow0 + row, unit)) << "chunk " << i << " word " << e;
      ++hits[dest];
    }
  }
  EXPECT_EQ(static_cast<int>(hits.size()), R * kUnits);  // every word of the operand's rows
  for (const auto& [offset, n] : hits) {
    EXPECT_EQ(n, 1) << "offset " << offset;
    EXPECT_GE(offset, kRow0 * kUnits);
    EXPECT_LT(offset, (kRow0 + R) * kUnits);
  }
  // A warp's 8 transposed stores (one 16-bit word each per lane): per store, the lanes hitting a
  // 4-byte bank all hit the same word (no conflict) on sm_90's 32 banks.
  if constexpr (kM == ja::Major::kCols) {
    for (int warp = 0; warp * 32 < Map::kChunks; ++warp) {
      for (int e = 0; e < 8; ++e) {
        std::map<int, int> word_of_bank;
        for (int lane = 0; lane < 32; ++lane) {
          const int i = warp * 32 + lane;
          const int word = Map::dest(Map::row(i), Map::col(i), e) / 2;
          const auto [it, fresh] = word_of_bank.emplace(word % 32, word);
          EXPECT_TRUE(fresh || it->second == word) << "warp " << warp << " store " << e;
        }
      }
    }
  }
}

TEST(GroupedGemmTile, LoaderMapsEveryWordOnce) {
  using ja::Major;
  // dgrad: A (dy) K-major rows, B (w read as [K, N]) transposed, for each row tile.
  check_map<128, 0, Major::kRows, 64, 2, 256>();
  check_map<64, 0, Major::kRows, 64, 2, 256>();
  check_map<16, 0, Major::kRows, 64, 2, 256>();
  check_map<128, 128, Major::kCols, 64, 2, 256>();
  check_map<128, 64, Major::kCols, 64, 2, 256>();
  check_map<128, 16, Major::kCols, 64, 2, 256>();
  // wgrad: both transposed.
  check_map<128, 0, Major::kCols, 64, 2, 256>();
  // fp8: both K-major bytes.
  check_map<128, 0, Major::kRows, 64, 1, 256>();
  check_map<128, 128, Major::kRows, 64, 1, 256>();
  check_map<16, 0, Major::kRows, 64, 1, 256>();
  check_map<128, 16, Major::kRows, 64, 1, 256>();
}

#if defined(JAX_AITER_TEST_GROUPED_GEMM_CO_GFX942)

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  if (!chars.empty()) std::memcpy(out.data(), chars.data(), chars.size());
  return out;
}

class GroupedGemmCodeObject : public ::testing::TestWithParam<const char*> {};

TEST_P(GroupedGemmCodeObject, EveryKernelHasOurArgumentLayout) {
  namespace K = jax_aiter::kernels;
  const std::vector<std::byte> bytes = read_file(GetParam());
  ASSERT_FALSE(bytes.empty()) << "cannot read " << GetParam();
  auto info = jax_aiter::runtime::read_code_object(bytes);
  ASSERT_TRUE(info.ok()) << info.status().message();
  std::vector<const K::KernelInfo*> ours{&K::kGroupedScheduleKernel};
  for (const auto& k : K::grouped_gemm_detail::kRowKernels) ours.push_back(&k);
  for (const auto& k : K::grouped_gemm_detail::kFp8Kernels) ours.push_back(&k);
  for (const auto& k : K::grouped_gemm_detail::kWgradKernels) ours.push_back(&k);
  EXPECT_EQ(info->kernels.size(), ours.size());
  for (const K::KernelInfo* k : ours) {
    SCOPED_TRACE(k->symbol);
    EXPECT_EQ(k->code_object, "grouped_gemm");
    const auto* md = info->find(k->symbol);
    ASSERT_NE(md, nullptr);
    const jax_aiter::Status st = jax_aiter::runtime::check_kernel_arguments(*md, *k);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(md->explicit_kernarg_bytes(), md->kernarg_segment_size);
    EXPECT_LE(md->kernarg_segment_size, k->args_size);
    EXPECT_EQ(md->private_segment_fixed_size, 0u) << "scratch: registers spilled";
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, GroupedGemmCodeObject,
                         ::testing::Values(JAX_AITER_TEST_GROUPED_GEMM_CO_GFX942,
                                           JAX_AITER_TEST_GROUPED_GEMM_CO_GFX950));

#endif

}  // namespace
