// core/: dtype conversions against independently stated values, arch parsing, Status/Expected.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "jax_aiter/core/arch.hpp"
#include "jax_aiter/core/dtype.hpp"
#include "jax_aiter/core/narrow.hpp"
#include "jax_aiter/core/status.hpp"

namespace ja = jax_aiter;

TEST(DType, SizesAndNames) {
  EXPECT_EQ(ja::size_bytes(ja::DType::kBF16), 2u);
  EXPECT_EQ(ja::size_bytes(ja::DType::kF32), 4u);
  EXPECT_EQ(ja::size_bytes(ja::DType::kF8E4M3FNUZ), 1u);
  EXPECT_EQ(ja::size_bytes(ja::DType::kF4E2M1x2), 1u);
  EXPECT_EQ(ja::size_bytes(ja::DType::kI32), 4u);
  EXPECT_EQ(ja::name(ja::DType::kF8E5M2), "f8_e5m2");
}

// Values from the format definitions (OCP FP8 spec; AMD fnuz; OCP MX e2m1/e8m0; IEEE f16).
TEST(DType, KnownCodes) {
  EXPECT_EQ(ja::decode(ja::kE4M3FNFormat, 0x7e), 448.0);  // max of e4m3fn
  EXPECT_TRUE(std::isnan(ja::decode(ja::kE4M3FNFormat, 0x7f)));
  EXPECT_EQ(ja::decode(ja::kE4M3FNFormat, 0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(ja::decode(ja::kE4M3FNUZFormat, 0x7f), 240.0);              // max of e4m3fnuz
  EXPECT_TRUE(std::isnan(ja::decode(ja::kE4M3FNUZFormat, 0x80)));
  EXPECT_EQ(ja::decode(ja::kE4M3FNUZFormat, 0x08), std::ldexp(1.0, -7));  // smallest normal
  EXPECT_EQ(ja::decode(ja::kE5M2Format, 0x7b), 57344.0);
  EXPECT_TRUE(std::isinf(ja::decode(ja::kE5M2Format, 0x7c)));
  EXPECT_EQ(ja::decode(ja::kE2M1Format, 0x7), 6.0);
  EXPECT_EQ(ja::decode(ja::kE2M1Format, 0x1), 0.5);
  EXPECT_EQ(ja::decode(ja::kE2M1Format, 0xb), -1.5);
  EXPECT_EQ(ja::decode(ja::kE8M0Format, 127), 1.0);
  EXPECT_EQ(ja::decode(ja::kE8M0Format, 0), std::ldexp(1.0, -127));
  EXPECT_TRUE(std::isnan(ja::decode(ja::kE8M0Format, 0xff)));
  EXPECT_EQ(ja::decode(ja::kF16Format, 0x3c00), 1.0);
  EXPECT_EQ(ja::decode(ja::kF16Format, 0x7bff), 65504.0);
  EXPECT_EQ(ja::decode(ja::kBF16Format, 0x3f80), 1.0);
}

// Every non-NaN code survives decode -> encode, for every narrow format.
TEST(DType, RoundTripAllCodes) {
  for (const ja::MiniFloat* f :
       {&ja::kE4M3FNFormat, &ja::kE4M3FNUZFormat, &ja::kE5M2Format, &ja::kE2M1Format,
        &ja::kE8M0Format, &ja::kF16Format, &ja::kBF16Format}) {
    const uint32_t codes = 1u << (f->exp_bits + f->man_bits + (f->has_sign ? 1 : 0));
    for (uint32_t c = 0; c < codes; ++c) {
      const double v = ja::decode(*f, c);
      if (std::isnan(v)) continue;
      ASSERT_EQ(ja::encode(*f, v), c)
          << "format e" << int(f->exp_bits) << "m" << int(f->man_bits) << " code " << c;
    }
  }
}

// Encoding rounds to the nearest code, ties to the even code: checked against a brute-force
// search over all codes (an independent rule) on random and midpoint inputs.
TEST(DType, EncodeIsNearestEven) {
  std::mt19937 rng(7);
  for (const ja::MiniFloat* f :
       {&ja::kE4M3FNFormat, &ja::kE4M3FNUZFormat, &ja::kE5M2Format, &ja::kE2M1Format}) {
    const uint32_t codes = 1u << (f->exp_bits + f->man_bits + 1);
    std::vector<std::pair<double, uint32_t>> finite;
    for (uint32_t c = 0; c < codes; ++c) {
      const double v = ja::decode(*f, c);
      if (std::isfinite(v)) finite.push_back({v, c});
    }
    const double max = ja::decode(*f, ja::detail::max_finite_code(*f));
    std::uniform_real_distribution<double> dist(-max, max);
    std::vector<double> inputs;
    for (int i = 0; i < 2000; ++i) inputs.push_back(dist(rng));
    for (size_t i = 0; i + 1 < finite.size(); ++i) {
      inputs.push_back((finite[i].first + finite[i + 1].first) / 2);  // includes midpoints
    }
    for (double x : inputs) {
      double best = std::numeric_limits<double>::infinity();
      uint32_t best_code = 0;
      for (auto [v, c] : finite) {
        const double d = std::fabs(v - x);
        const bool even = (c & 1u) == 0;
        if (d < best || (d == best && even)) {
          best = d;
          best_code = c;
        }
      }
      const double got = ja::decode(*f, ja::encode(*f, x));
      ASSERT_EQ(got, ja::decode(*f, best_code)) << "x=" << x;
    }
  }
}

TEST(DType, OverflowAndNan) {
  EXPECT_TRUE(std::isnan(ja::decode(ja::kE4M3FNFormat, ja::encode(ja::kE4M3FNFormat, 1e6))));
  EXPECT_TRUE(std::isinf(ja::decode(ja::kE5M2Format, ja::encode(ja::kE5M2Format, 1e6))));
  EXPECT_EQ(ja::decode(ja::kE2M1Format, ja::encode(ja::kE2M1Format, 100.0)), 6.0);  // saturates
  EXPECT_EQ(ja::encode(ja::kE4M3FNUZFormat, -0.0), 0u);  // fnuz has no -0
  EXPECT_TRUE(std::isnan(ja::decode(ja::kF16Format, ja::encode(ja::kF16Format, NAN))));
}

TEST(DType, Bf16BitPathMatchesGeneric) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 100000; ++i) {
    const float x = std::bit_cast<float>(bits(rng));
    if (std::isnan(x)) continue;
    ASSERT_EQ(ja::float_to_bf16(x), ja::encode(ja::kBF16Format, x)) << x;
    ASSERT_EQ(ja::bf16_to_float(ja::float_to_bf16(x)),
              static_cast<float>(ja::decode(ja::kBF16Format, ja::float_to_bf16(x))));
  }
}

TEST(Arch, ParsesGcnArchName) {
  EXPECT_EQ(*ja::parse_gcn_arch_name("gfx942:sramecc+:xnack-"), ja::Arch::kGfx942);
  EXPECT_EQ(*ja::parse_gcn_arch_name("gfx950"), ja::Arch::kGfx950);
  auto bad = ja::parse_gcn_arch_name("gfx90a:sramecc+:xnack-");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ja::ErrorCode::kUnimplemented);
  EXPECT_NE(bad.status().message().find("gfx90a"), std::string::npos);
  EXPECT_EQ(ja::warp_size(ja::Arch::kGfx950), 64);
  EXPECT_EQ(ja::warp_size(ja::Arch::kSm90), 32);
  EXPECT_EQ(*ja::arch_from_compute_capability(9, 0), ja::Arch::kSm90);
  EXPECT_FALSE(ja::arch_from_compute_capability(8, 0).ok());
}

TEST(Status, ExpectedCarriesValueOrError) {
  ja::Expected<int> v = 3;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
  ja::Expected<int> e = ja::InvalidArgument("nope");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ja::ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.status().message(), "nope");
  ja::Expected<std::string> copy = ja::Expected<std::string>(std::string("abc"));
  ja::Expected<std::string> moved = std::move(copy);
  EXPECT_EQ(*moved, "abc");
}

TEST(Narrow, Checked) {
  EXPECT_EQ(ja::checked_narrow<int32_t>(int64_t{5}), 5);
  EXPECT_FALSE(ja::checked_narrow<int32_t>(int64_t{1} << 40).has_value());
  EXPECT_EQ(ja::ceil_div(10, 4), 3);
}
