// AITER's fmoe code objects against our argument structs (kernels/aiter/fmoe.hpp): every row's
// struct covers the kernarg segment its code object declares (the CSV's kernarg_bytes), the
// catalog names each code object once, and, given an AITER checkout ($JAX_AITER_AITER_ROOT or the
// build's JAX_AITER_AITER_ROOT), check-aiter (runtime/check_aiter.hpp, what jax-aiter-check-aiter
// runs) finds every fmoe code object and matches every one, and our CSV restates AITER's rows.
// The same for the two-stage family (kernels/aiter/fmoe_2stages.hpp, fmoe_2stages).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "jax_aiter/kernels/aiter/catalog.hpp"
#include "jax_aiter/kernels/aiter/fmoe.hpp"
#include "jax_aiter/kernels/aiter/fmoe_2stages.hpp"
#include "jax_aiter/runtime/check_aiter.hpp"

#include "fmoe_csv_testing.hpp"

namespace {

namespace kn = jax_aiter::kernels;
using fmoe_testing::CsvRow;

TEST(FmoeAbi, EveryRowsStructCoversItsDeclaredSegment) {
  std::map<uint32_t, int> by_size;
  for (const kn::AiterFmoeRow& r : kn::kAiterFmoeRows) {
    // The struct we pack is the declared segment, or (416, 436) AITER's 448 bytes, which cover
    // it: those kernels end their arguments after topk or pack ps_deno without its slot's pad.
    if (r.kernarg_bytes == 448 || r.kernarg_bytes == 480) {
      EXPECT_EQ(r.kernel.args_size, r.kernarg_bytes) << r.kernel.symbol;
    } else {
      EXPECT_TRUE(r.kernarg_bytes == 416 || r.kernarg_bytes == 436) << r.kernel.symbol;
      EXPECT_EQ(r.kernel.args_size, 448u) << r.kernel.symbol;
    }
    // Every field the kernel can read lies inside our struct.
    for (const kn::ArgField& f : r.kernel.fields) {
      EXPECT_LE(f.offset + f.size, r.kernel.args_size) << r.kernel.symbol << " " << f.name;
    }
    ++by_size[r.kernarg_bytes];
  }
  EXPECT_EQ(by_size[448] + by_size[480] + by_size[416] + by_size[436],
            int(std::size(kn::kAiterFmoeRows)));
  std::printf("rows by declared kernarg bytes: 448 x %d, 480 x %d, 436 x %d, 416 x %d\n",
              by_size[448], by_size[480], by_size[436], by_size[416]);
}

// The header compares only flat rows when it lists each code object once (it would cost every
// includer seconds to compare all pairs): no other code object may sit in two rows of one arch.
TEST(FmoeAbi, OnlyFlatRowsShareACodeObject) {
  for (const jax_aiter::Arch arch : {jax_aiter::Arch::kGfx942, jax_aiter::Arch::kGfx950}) {
    std::map<std::string_view, std::vector<const kn::AiterFmoeRow*>> by_co;
    for (const kn::AiterFmoeRow& r : kn::kAiterFmoeRows) {
      if (kn::on(r, arch)) by_co[r.kernel.code_object].push_back(&r);
    }
    for (const auto& [co, rs] : by_co) {
      if (rs.size() < 2) continue;
      for (const kn::AiterFmoeRow* r : rs) EXPECT_NE(r->flat, 0) << co;
    }
  }
  int gfx942 = 0, gfx950 = 0;
  for (const kn::AiterFamily& f : kn::AiterCatalog::families()) {
    if (f.name != "fmoe") continue;
    std::set<std::string_view> seen;
    for (const kn::KernelInfo* k : f.kernels) EXPECT_TRUE(seen.insert(k->code_object).second);
    (f.arch == "gfx942" ? gfx942 : gfx950) = int(f.kernels.size());
  }
  EXPECT_EQ(gfx942, 386);
  EXPECT_EQ(gfx950, 406);
}

// Our CSV restates AITER's: the same rows of every list we keep, per arch.
TEST(FmoeAbi, OurRowsAreAitersRows) {
  const std::string root = fmoe_testing::aiter_root(JAX_AITER_TEST_AITER_ROOT);
  if (root.empty()) GTEST_SKIP() << "no AITER checkout (set JAX_AITER_AITER_ROOT)";
  const auto ours = fmoe_testing::our_rows(JAX_AITER_FMOE_CSV);
  using Key = std::tuple<std::string, std::string, std::string, std::string, int, int, int, int,
                         int, int, int, int>;
  auto key = [](const CsvRow& r, const std::string& arch) {
    return Key{arch,  r.list(), r.symbol, r.code_object, r.atm,   r.vskip,
               r.smf, r.tgs,    r.ps,     r.sub_m,       r.sub_n, r.flat};
  };
  std::set<Key> want, got;
  std::set<std::string> lists;
  for (const CsvRow& r : ours) {
    for (const std::string arch : {"gfx942", "gfx950"}) {
      if (r.on(arch)) got.insert(key(r, arch));
    }
    lists.insert(r.list());
  }
  for (const CsvRow& r : ours) {
    if (!lists.count(r.list())) continue;
    for (const std::string arch : {"gfx942", "gfx950"}) {
      for (const CsvRow& a : fmoe_testing::aiter_rows(root, arch, r)) want.insert(key(a, arch));
    }
    lists.erase(r.list());
  }
  EXPECT_EQ(got, want);
  std::printf("%zu (arch, list, kernel) rows, as in %s/hsa\n", got.size(), root.c_str());
}

TEST(FmoeAbi, CheckAiterMatchesEveryFmoeCodeObject) {
  const std::string root = fmoe_testing::aiter_root(JAX_AITER_TEST_AITER_ROOT);
  if (root.empty()) GTEST_SKIP() << "no AITER checkout (set JAX_AITER_AITER_ROOT)";
  const auto report = jax_aiter::runtime::check_aiter(root);
  ASSERT_TRUE(report.ok()) << report.status().message();
  // The kernarg bytes each row says its code object declares.
  std::map<std::pair<std::string, std::string>, uint32_t> declared;
  for (const kn::AiterFmoeRow& r : kn::kAiterFmoeRows) {
    for (const jax_aiter::Arch arch : {jax_aiter::Arch::kGfx942, jax_aiter::Arch::kGfx950}) {
      if (kn::on(r, arch)) {
        declared[{std::string(jax_aiter::name(arch)), std::string(r.kernel.code_object)}] =
            r.kernarg_bytes;
      }
    }
  }
  int ok = 0, missing = 0, mismatch = 0;
  std::map<std::string, int> layouts;
  for (const auto& c : *report) {
    if (c.family != "fmoe") continue;
    using R = jax_aiter::runtime::AiterCheck::Result;
    if (c.result == R::kOk) {
      ++ok;
      ++layouts[c.arch + " " + c.abi + " declares " + std::to_string(c.declared)];
      EXPECT_EQ(c.declared, declared.at({c.arch, c.code_object})) << c.code_object;
    } else {
      (c.result == R::kMissing ? missing : mismatch) += 1;
      ADD_FAILURE() << name(c.result) << " " << c.arch << " " << c.code_object << ": " << c.detail;
    }
  }
  EXPECT_EQ(ok, 386 + 406);
  for (const auto& [what, n] : layouts) std::printf("  %s: %d\n", what.c_str(), n);
  std::printf("check-aiter fmoe: %d ok, %d missing, %d mismatch (under %s/hsa)\n", ok, missing,
              mismatch, root.c_str());
}

// ---- the two-stage family ---------------------------------------------------------------------

TEST(Fmoe2StagesAbi, EveryRowsStructCoversItsDeclaredSegment) {
  int wide = 0;
  for (const kn::AiterFmoe2StagesRow& r : kn::kAiterFmoe2StagesRows) {
    EXPECT_EQ(r.kernel.args_size, r.kernarg_bytes) << r.kernel.symbol;  // 368 or 400
    for (const kn::ArgField& f : r.kernel.fields) {
      EXPECT_LE(f.offset + f.size, r.kernel.args_size) << r.kernel.symbol << " " << f.name;
    }
    wide += r.wide();
  }
  EXPECT_EQ(wide, 4);
}

// Our CSV restates AITER's four lists per arch: (arch, list, symbol, code object, tile).
TEST(Fmoe2StagesAbi, OurRowsAreAitersRows) {
  const std::string root = fmoe_testing::aiter_root(JAX_AITER_TEST_AITER_ROOT);
  if (root.empty()) GTEST_SKIP() << "no AITER checkout (set JAX_AITER_AITER_ROOT)";
  using Key = std::tuple<std::string, std::string, std::string, std::string, int, int>;
  std::set<Key> want, got;
  const std::pair<const char*, const char*> lists[] = {
      {"fmoe_stage1_bf16_pertokenFp8_g1u1", "pertokenFp8 0"},
      {"fmoe_stage1_bf16_pertokenFp8_doweight_g1u1", "pertokenFp8 1"},
      {"fmoe_stage1_bf16_pertokenInt8_g1u1", "pertokenInt8 0"},
      {"fmoe_stage1_bf16_pertokenFp8_blockscale_g1u1", "blockscaleFp8 0"}};
  for (const std::string arch : {"gfx942", "gfx950"}) {
    for (const auto& [file, list] : lists) {
      const std::string path = root + "/hsa/" + arch + "/fmoe_2stages/" + file + ".csv";
      FILE* f = std::fopen(path.c_str(), "r");
      ASSERT_NE(f, nullptr) << path;
      char line[512];
      std::fgets(line, sizeof line, f);  // tile_m,tile_n,knl_name,co_name
      char name[256], co[256];
      int tm = 0, tn = 0;
      while (std::fscanf(f, "%d,%d,%255[^,],%255s", &tm, &tn, name, co) == 4) {
        want.insert({arch, list, name, std::string("fmoe_2stages/") + co, tm, tn});
      }
      std::fclose(f);
    }
  }
  const char* quants[] = {"pertokenFp8", "pertokenInt8", "blockscaleFp8"};
  for (const kn::AiterFmoe2StagesRow& r : kn::kAiterFmoe2StagesRows) {
    const std::string list =
        std::string(quants[static_cast<int>(r.quant)]) + (r.doweight ? " 1" : " 0");
    for (const jax_aiter::Arch arch : {jax_aiter::Arch::kGfx942, jax_aiter::Arch::kGfx950}) {
      if (!kn::on(r, arch)) continue;
      got.insert({std::string(jax_aiter::name(arch)), list, std::string(r.kernel.symbol),
                  std::string(r.kernel.code_object), r.tile_m, r.tile_n});
    }
  }
  EXPECT_EQ(got, want);
  std::printf("%zu (arch, list, kernel) rows, as in %s/hsa\n", got.size(), root.c_str());
}

TEST(Fmoe2StagesAbi, CheckAiterMatchesEveryCodeObject) {
  const std::string root = fmoe_testing::aiter_root(JAX_AITER_TEST_AITER_ROOT);
  if (root.empty()) GTEST_SKIP() << "no AITER checkout (set JAX_AITER_AITER_ROOT)";
  const auto report = jax_aiter::runtime::check_aiter(root);
  ASSERT_TRUE(report.ok()) << report.status().message();
  int ok = 0, missing = 0, mismatch = 0;
  std::map<std::string, int> layouts;
  for (const auto& c : *report) {
    if (c.family != "fmoe_2stages") continue;
    using R = jax_aiter::runtime::AiterCheck::Result;
    if (c.result == R::kOk) {
      ++ok;
      ++layouts[c.arch + " " + c.abi + " declares " + std::to_string(c.declared)];
    } else {
      (c.result == R::kMissing ? missing : mismatch) += 1;
      ADD_FAILURE() << name(c.result) << " " << c.arch << " " << c.code_object << ": " << c.detail;
    }
  }
  EXPECT_EQ(ok, 186 + 182);
  for (const auto& [what, n] : layouts) std::printf("  %s: %d\n", what.c_str(), n);
  std::printf("check-aiter fmoe_2stages: %d ok, %d missing, %d mismatch (under %s/hsa)\n", ok,
              missing, mismatch, root.c_str());
}

}  // namespace
