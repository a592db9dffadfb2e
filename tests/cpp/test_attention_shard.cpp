// Flash attention split into shards, through the handlers on the Host backend (no XLA, no GPU):
// one call is cut along batch, query heads or query rows (q's rows split, k and v whole, as
// context parallelism cuts it), every shard runs with its inputs sliced and its `shard` operand
// {b0, h0, r0, sq_total}, and must give the whole call's values on its slice. With dropout (the
// keep bits use the whole call's batch, head and row), causal masks, windows and ALiBi (aligned
// to the whole call's bottom-right corner), and bias (sliced like q). Bit for bit where the
// arithmetic is the same: out, lse, dq and dbias of every shard whose row tiles line up with the
// whole call's (kRowsQ), dk and dv of batch and head shards, the dropout masks; a row shard's dk
// and dv are partial sums, whose total must match within rounding, as must the values of a row
// split that cuts through a tile. Also: an absent shard, {0, 0, 0, 0} and {0, 0, 0, sq} all give
// the unsharded bits; a wrong-shaped shard is an error naming the operand; AITER's ASM tier
// declines a sharded call (ours serves it).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "jax_aiter/ffi/attention.hpp"
#include "jax_aiter/host_twins/aiter_fmha_v3.hpp"
#include "jax_aiter/host_twins/attention.hpp"
#include "jax_aiter/ops/attention.hpp"
#include "jax_aiter/runtime/host.hpp"
#include "jax_aiter/testing/fake_ffi.hpp"
#include "jax_aiter/testing/host_array.hpp"

namespace ja = jax_aiter;
namespace fake = jax_aiter::testing;
namespace ops = jax_aiter::ops;
using fake::Array;
using ja::DType;

JAX_AITER_DEFINE_HANDLER(test_shard_fwd_cpu, ops::FlashAttnFwd, ja::runtime::Host);
JAX_AITER_DEFINE_HANDLER(test_shard_bwd_cpu, ops::FlashAttnBwd, ja::runtime::Host);
JAX_AITER_DEFINE_HANDLER(test_shard_mask_cpu, ops::AttnDropoutMask, ja::runtime::Host);

namespace {

using Shard = std::array<int32_t, 4>;  // {b0, h0, r0, sq_total}

// ---- arrays: slices and exact comparison --------------------------------------------------------

Array int32_array(const std::vector<int32_t>& v) {
  Array a(DType::kI32, {static_cast<int64_t>(v.size())});
  std::memcpy(a.data(), v.data(), v.size() * sizeof(int32_t));
  return a;
}

// The block [start, start + size) of a row-major array (every dim given).
Array slice(const Array& a, const std::vector<int64_t>& start, const std::vector<int64_t>& size) {
  Array out(a.dtype, size);
  const size_t es = fake::elem_bytes(a.dtype), rank = a.dims.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < out.size(); ++e) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d) src = src * a.dims[d] + start[d] + idx[d];
    std::memcpy(&out.bytes[static_cast<size_t>(e) * es], &a.bytes[static_cast<size_t>(src) * es],
                es);
    for (size_t d = rank; d-- > 0;) {  // the next index, last dim fastest
      if (++idx[d] < size[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

::testing::AssertionResult same_bits(const char* what, const Array& got, const Array& want) {
  if (got.dims != want.dims) return ::testing::AssertionFailure() << what << ": shapes differ";
  const size_t es = fake::elem_bytes(got.dtype);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got.bytes[i * es], &want.bytes[i * es], es) != 0 && bad++ == 0) first = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  auto f = ::testing::AssertionFailure();
  f << what << ": " << bad << " of " << got.size() << " elements differ, first [" << first << "]";
  if (got.dtype != DType::kU8) f << ": got " << got.at(first) << " want " << want.at(first);
  return f;
}

// |got - want| <= tol * (max |want| + |want|), inf equal to inf.
::testing::AssertionResult close(const char* what, const std::vector<double>& got,
                                 const std::vector<double>& want, double tol) {
  double mag = 0;
  for (double x : want) {
    if (std::isfinite(x)) mag = std::max(mag, std::abs(x));
  }
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const bool ok = std::isinf(w) ? g == w : std::abs(g - w) <= tol * (mag + std::abs(w));
    if (!ok && bad++ == 0) {
      first =
          "[" + std::to_string(i) + "]: got " + std::to_string(g) + " want " + std::to_string(w);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << got.size() << " wrong, first " << first;
}

// ---- one attention problem ----------------------------------------------------------------------

enum class BiasKind { kNone, kFull, kBroadcast };     // f32 [b, hq, sq, sk]; dtype [1, hq, 1, sk]
enum class AlibiKind { kNone, kHeads, kBatchHeads };  // f32 [hq]; f32 [b, hq]

struct Config {
  const char* name;
  int64_t b = 2, sq = 192, sk = 160, hq = 4, hk = 2, d = 32, dv = 32;
  DType dtype = DType::kBF16;
  bool causal = false;
  int64_t left = -1, right = -1;
  float dropout_p = 0.f;
  BiasKind bias = BiasKind::kNone;
  AlibiKind alibi = AlibiKind::kNone;
};

void PrintTo(const Config& c, std::ostream* os) { *os << c.name; }

struct Inputs {
  Array q, k, v, dout, key;
  std::optional<Array> bias, alibi;
};

struct Outputs {
  Array out{DType::kF32, {0}}, lse{DType::kF32, {0}}, dq{DType::kF32, {0}}, dk{DType::kF32, {0}},
      dv{DType::kF32, {0}}, dbias{DType::kF32, {0}};
};

Inputs make_inputs(const Config& c, uint64_t seed) {
  fake::Rng rng(seed);
  Inputs in{Array(c.dtype, {c.b, c.sq, c.hq, c.d}),
            Array(c.dtype, {c.b, c.sk, c.hk, c.d}),
            Array(c.dtype, {c.b, c.sk, c.hk, c.dv}),
            Array(c.dtype, {c.b, c.sq, c.hq, c.dv}),
            int32_array({0x2545F491, -0x7B3A1C05}),
            {},
            {}};
  for (Array* a : {&in.q, &in.k, &in.v, &in.dout}) fake::fill(*a, rng, -1, 1);
  if (c.bias == BiasKind::kFull) in.bias = Array(DType::kF32, {c.b, c.hq, c.sq, c.sk});
  if (c.bias == BiasKind::kBroadcast) in.bias = Array(c.dtype, {1, c.hq, 1, c.sk});
  if (in.bias) fake::fill(*in.bias, rng, -2, 2);
  if (c.alibi == AlibiKind::kHeads) in.alibi = Array(DType::kF32, {c.hq});
  if (c.alibi == AlibiKind::kBatchHeads) in.alibi = Array(DType::kF32, {c.b, c.hq});
  if (in.alibi) fake::fill(*in.alibi, rng, 0.01, 0.3);
  return in;
}

// A shard's place: batches [b0, b0 + nb), query heads [h0, h0 + nh) (with their key heads),
// query rows [r0, r0 + nr).
struct Piece {
  int64_t b0, nb, h0, nh, r0, nr;
};

// The inputs of piece `p` of the whole call's: q and dout cut along all three, k and v along
// batch and key heads, bias along its non-broadcast dims, ALiBi slopes along batch and heads.
Inputs slice_inputs(const Config& c, const Inputs& w, const Piece& p) {
  const int64_t group = c.hq / c.hk, hk0 = p.h0 / group, nhk = p.nh / group;
  Inputs in{slice(w.q, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.d}),
            slice(w.k, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.d}),
            slice(w.v, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.dv}),
            slice(w.dout, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.dv}),
            w.key,
            {},
            {}};
  if (w.bias) {
    const std::vector<int64_t>& bd = w.bias->dims;
    const int64_t at[4] = {p.b0, p.h0, p.r0, 0}, n[4] = {p.nb, p.nh, p.nr, c.sk};
    std::vector<int64_t> start(4), size(4);
    for (int i = 0; i < 4; ++i) {
      start[i] = bd[i] == 1 ? 0 : at[i];
      size[i] = bd[i] == 1 ? 1 : n[i];
    }
    in.bias = slice(*w.bias, start, size);
  }
  if (w.alibi) {
    in.alibi = w.alibi->dims.size() == 1 ? slice(*w.alibi, {p.h0}, {p.nh})
                                         : slice(*w.alibi, {p.b0, p.h0}, {p.nb, p.nh});
  }
  return in;
}

ops::Tensor tensor(Array& a) {
  return ops::Tensor::over(a.data(), a.dtype, std::span<const int64_t>(a.dims));
}

struct Tier {
  std::string tier = "portable";
  std::string arch;
  int64_t cus = 0;
};

void attributes(fake::CallFrame& f, const Config& c, const Tier& t) {
  f.attr("softmax_scale", static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.d))))
      .attr("causal", c.causal)
      .attr("window_left", c.left)
      .attr("window_right", c.right)
      .attr("dropout_p", c.dropout_p)
      .attr("max_seqlen_q", int64_t{0})
      .attr("max_seqlen_k", int64_t{0})
      .attr("bf16_cvt", int64_t{0})
      .string_attr("tier", t.tier);
  if (!t.arch.empty()) f.string_attr("asm_arch", t.arch).attr("asm_cus", t.cus);
}

void add_optional(fake::CallFrame& f, std::optional<Array>& a) {
  if (a) {
    fake::add_arg(f, *a);
  } else {
    fake::add_absent(f);
  }
}

// The forward and then the backward of one call (the backward reads the forward's out and lse),
// every output poisoned first. `shard_operand` is passed as the shard (absent when empty).
fake::CallResult run(const Config& c, Inputs& in, std::optional<Array> shard_operand, Outputs& o,
                     const Tier& tier = {}) {
  const int64_t b = in.q.dims[0], sq = in.q.dims[1], hq = in.q.dims[2];
  o.out = Array(c.dtype, {b, sq, hq, c.dv});
  o.lse = Array(DType::kF32, {b, hq, sq});
  o.dq = Array(c.dtype, in.q.dims);
  o.dk = Array(c.dtype, in.k.dims);
  o.dv = Array(c.dtype, in.v.dims);
  o.dbias = in.bias ? Array(DType::kF32, {b, hq, sq, c.sk}) : Array(DType::kF32, {0});
  for (Array* a : {&o.out, &o.lse, &o.dq, &o.dk, &o.dv, &o.dbias}) a->poison();
  std::optional<Array> key;
  if (c.dropout_p > 0) key = in.key;

  fake::CallFrame f;
  for (Array* a : {&in.q, &in.k, &in.v}) fake::add_arg(f, *a);
  add_optional(f, in.bias);
  add_optional(f, in.alibi);
  fake::add_absent(f);  // cu_seqlens_q
  fake::add_absent(f);  // cu_seqlens_k
  add_optional(f, key);
  add_optional(f, shard_operand);
  for (int i = 0; i < 3; ++i) fake::add_absent(f);  // q_descale, k_descale, v_descale
  fake::add_ret(f, o.out);
  fake::add_ret(f, o.lse);
  attributes(f, c, tier);
  const fake::CallResult fr = fake::call(test_shard_fwd_cpu, f);
  if (!fr.ok()) return fr;

  // The workspace as Python sizes it, filled with garbage.
  ops::FlashAttnBwdParams bp;
  bp.dout = tensor(in.dout);
  bp.q = tensor(in.q);
  bp.k = tensor(in.k);
  bp.v = tensor(in.v);
  bp.out = tensor(o.out);
  bp.lse = tensor(o.lse);
  if (in.bias) bp.bias = tensor(*in.bias);
  if (shard_operand) bp.shard = tensor(*shard_operand);
  bp.dq = tensor(o.dq);
  bp.dk = tensor(o.dk);
  bp.dv = tensor(o.dv);
  bp.dbias = tensor(o.dbias);
  bp.opt.causal = c.causal;
  bp.dispatch.tier = tier.tier;
  Array workspace(DType::kU8, {ops::FlashAttnBwd::workspace_bytes(bp)});
  std::fill(workspace.bytes.begin(), workspace.bytes.end(), 0xAB);

  fake::CallFrame g;
  for (Array* a : {&in.dout, &in.q, &in.k, &in.v, &o.out, &o.lse}) fake::add_arg(g, *a);
  add_optional(g, in.bias);
  add_optional(g, in.alibi);
  fake::add_absent(g);
  fake::add_absent(g);
  add_optional(g, key);
  add_optional(g, shard_operand);
  for (Array* a : {&o.dq, &o.dk, &o.dv, &o.dbias, &workspace}) fake::add_ret(g, *a);
  attributes(g, c, tier);
  g.attr("deterministic", false).attr("atomic32", true);
  return fake::call(test_shard_bwd_cpu, g);
}

Outputs run_ok(const Config& c, Inputs& in, std::optional<Array> shard_operand,
               const Tier& tier = {}) {
  Outputs o;
  const fake::CallResult r = run(c, in, std::move(shard_operand), o, tier);
  EXPECT_TRUE(r.ok()) << r.message;
  return o;
}

// ---- shards against the whole call --------------------------------------------------------------

// Runs every piece of a split of the whole call (pieces tiling it) with its shard offsets and
// checks each against the whole's slice: out, lse, dq, dbias bit for bit when `exact`, else within
// rounding; dk and dv summed over the pieces that share them (row pieces), bit for bit when a
// piece holds every row and `exact`.
void check_split(const Config& c, const Inputs& whole_in, const Outputs& whole,
                 const std::vector<Piece>& pieces, bool exact, bool sq_total_zero_when_whole) {
  const int64_t group = c.hq / c.hk;
  std::vector<double> dk_sum(static_cast<size_t>(whole.dk.size()), 0.0),
      dv_sum(static_cast<size_t>(whole.dv.size()), 0.0);
  const bool bf16 = c.dtype == DType::kBF16;
  const double tol = bf16 ? 0x1.0p-7 : 0x1.0p-10;
  for (const Piece& p : pieces) {
    SCOPED_TRACE("piece b0=" + std::to_string(p.b0) + " h0=" + std::to_string(p.h0) +
                 " r0=" + std::to_string(p.r0) + " rows=" + std::to_string(p.nr));
    Inputs in = slice_inputs(c, whole_in, p);
    // sq_total 0 means "this call's sq": valid whenever the piece holds every row.
    const int32_t sq_total = p.nr == c.sq && sq_total_zero_when_whole ? 0 : int32_t(c.sq);
    const Shard offsets{int32_t(p.b0), int32_t(p.h0), int32_t(p.r0), sq_total};
    const Outputs o = run_ok(c, in, int32_array({offsets.begin(), offsets.end()}));
    const int64_t hk0 = p.h0 / group, nhk = p.nh / group;
    const Array out = slice(whole.out, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.dv});
    const Array lse = slice(whole.lse, {p.b0, p.h0, p.r0}, {p.nb, p.nh, p.nr});
    const Array dq = slice(whole.dq, {p.b0, p.r0, p.h0, 0}, {p.nb, p.nr, p.nh, c.d});
    if (exact) {
      EXPECT_TRUE(same_bits("out", o.out, out));
      EXPECT_TRUE(same_bits("lse", o.lse, lse));
      EXPECT_TRUE(same_bits("dq", o.dq, dq));
      if (in.bias) {
        const Array dbias = slice(whole.dbias, {p.b0, p.h0, p.r0, 0}, {p.nb, p.nh, p.nr, c.sk});
        EXPECT_TRUE(same_bits("dbias", o.dbias, dbias));
      }
    } else {
      EXPECT_TRUE(close("out", o.out.values(), out.values(), tol));
      EXPECT_TRUE(close("lse", o.lse.values(), lse.values(), 1e-5));
      EXPECT_TRUE(close("dq", o.dq.values(), dq.values(), 2 * tol));
    }
    if (p.nr == c.sq && exact) {
      EXPECT_TRUE(
          same_bits("dk", o.dk, slice(whole.dk, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.d})));
      EXPECT_TRUE(
          same_bits("dv", o.dv, slice(whole.dv, {p.b0, 0, hk0, 0}, {p.nb, c.sk, nhk, c.dv})));
    }
    // Add this piece's dk, dv into their places in the whole.
    auto add = [&](const Array& part, std::vector<double>& sum, int64_t dim) {
      for (int64_t b = 0; b < p.nb; ++b) {
        for (int64_t j = 0; j < c.sk; ++j) {
          for (int64_t h = 0; h < nhk; ++h) {
            for (int64_t e = 0; e < dim; ++e) {
              const int64_t from = ((b * c.sk + j) * nhk + h) * dim + e;
              const int64_t to = (((p.b0 + b) * c.sk + j) * c.hk + hk0 + h) * dim + e;
              sum[static_cast<size_t>(to)] += part.at(from);
            }
          }
        }
      }
    };
    add(o.dk, dk_sum, c.d);
    add(o.dv, dv_sum, c.dv);
  }
  EXPECT_TRUE(close("dk summed over the pieces", dk_sum, whole.dk.values(), 2 * tol));
  EXPECT_TRUE(close("dv summed over the pieces", dv_sum, whole.dv.values(), 2 * tol));
}

std::vector<Piece> batch_pieces(const Config& c) {
  std::vector<Piece> out;
  for (int64_t b = 0; b < c.b; ++b) out.push_back({b, 1, 0, c.hq, 0, c.sq});
  return out;
}
// Two pieces of heads, each with whole key-head groups.
std::vector<Piece> head_pieces(const Config& c) {
  const int64_t half = c.hq / 2;
  return {{0, c.b, 0, half, 0, c.sq}, {0, c.b, half, c.hq - half, 0, c.sq}};
}
// Rows cut at the given boundaries (k and v whole).
std::vector<Piece> row_pieces(const Config& c, const std::vector<int64_t>& cuts) {
  std::vector<Piece> out;
  int64_t r = 0;
  for (int64_t cut : cuts) {
    out.push_back({0, c.b, 0, c.hq, r, cut - r});
    r = cut;
  }
  out.push_back({0, c.b, 0, c.hq, r, c.sq - r});
  return out;
}
// Every batch x every head half x rows cut at the given boundaries.
std::vector<Piece> grid_pieces(const Config& c, const std::vector<int64_t>& cuts) {
  std::vector<Piece> out;
  for (const Piece& b : batch_pieces(c)) {
    for (const Piece& h : head_pieces(c)) {
      for (const Piece& r : row_pieces(c, cuts)) out.push_back({b.b0, 1, h.h0, h.nh, r.r0, r.nr});
    }
  }
  return out;
}

// Dropout, causal masks, windows (one whose right bound is a no-op for a shard's own rows but not
// for the whole call's, one beyond any int32), ALiBi of both shapes, bias full and broadcast, both
// dtypes, queries that see no key (sq > sk, causal) and d != dv.
const Config kConfigs[] = {
    {.name = "causal dropout", .causal = true, .dropout_p = 0.3f},
    {.name = "window alibi[b,hq] f16",
     .d = 40,
     .dv = 24,
     .dtype = DType::kF16,
     .left = 24,
     .right = 8,
     .alibi = AlibiKind::kBatchHeads},
    {.name = "bias causal alibi[hq] dropout",
     .causal = true,
     .dropout_p = 0.2f,
     .bias = BiasKind::kFull,
     .alibi = AlibiKind::kHeads},
    {.name = "broadcast bias, left window, dropout",
     .left = 50,
     .dropout_p = 0.1f,
     .bias = BiasKind::kBroadcast},
    {.name = "right window wider than a shard", .right = 100, .alibi = AlibiKind::kHeads},
    // "Unbounded" written as a huge number: a no-op for every shard, not a truncated bound.
    {.name = "right window of 2^40", .right = int64_t{1} << 40, .dropout_p = 0.1f},
    {.name = "sq > sk causal dropout", .sq = 192, .sk = 96, .causal = true, .dropout_p = 0.25f},
};

class AttnShard : public ::testing::TestWithParam<Config> {};

// Pieces along each dim whose row tiles line up with the whole call's: bit for bit.
TEST_P(AttnShard, AlignedShardsGiveTheWholeCallsBits) {
  const Config& c = GetParam();
  Inputs in = make_inputs(c, 5);
  const Outputs whole = run_ok(c, in, std::nullopt);
  {
    SCOPED_TRACE("batch");
    check_split(c, in, whole, batch_pieces(c), true, true);
  }
  {
    SCOPED_TRACE("heads");
    check_split(c, in, whole, head_pieces(c), true, false);
  }
  {
    SCOPED_TRACE("rows");
    check_split(c, in, whole, row_pieces(c, {64}), true, false);
  }
  {
    SCOPED_TRACE("batch x heads x rows");
    check_split(c, in, whole, grid_pieces(c, {64, 128}), true, false);
  }
}

// Row pieces cut through a tile: the same values within rounding (tiles, so summation orders,
// differ from the whole call's).
TEST_P(AttnShard, UnalignedRowShardsAgreeWithinRounding) {
  const Config& c = GetParam();
  Inputs in = make_inputs(c, 9);
  const Outputs whole = run_ok(c, in, std::nullopt);
  check_split(c, in, whole, row_pieces(c, {40, 101}), false, false);
}

// No shard, and shards that name the whole call, give today's unsharded bits.
TEST_P(AttnShard, AbsentOrWholeShardIsUnsharded) {
  const Config& c = GetParam();
  Inputs in = make_inputs(c, 3);
  const Outputs none = run_ok(c, in, std::nullopt);
  for (const Shard s : {Shard{0, 0, 0, 0}, Shard{0, 0, 0, int32_t(c.sq)}}) {
    const Outputs o = run_ok(c, in, int32_array({s.begin(), s.end()}));
    EXPECT_TRUE(same_bits("out", o.out, none.out));
    EXPECT_TRUE(same_bits("lse", o.lse, none.lse));
    EXPECT_TRUE(same_bits("dq", o.dq, none.dq));
    EXPECT_TRUE(same_bits("dk", o.dk, none.dk));
    EXPECT_TRUE(same_bits("dv", o.dv, none.dv));
    EXPECT_TRUE(same_bits("dbias", o.dbias, none.dbias));
  }
}

INSTANTIATE_TEST_SUITE_P(Features, AttnShard, ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n) ch = std::isalnum(ch) ? ch : '_';
                           return n;
                         });

// A shard's dropout mask is the whole call's mask at its offsets.
TEST(AttnShardMask, ShardsGiveTheWholeMasksBits) {
  const int64_t b = 2, h = 3, sq = 37, sk = 70;
  Array key = int32_array({0x13579BDF, 0x2468ACE0});
  auto mask = [&](int64_t nb, int64_t nh, int64_t nr, std::optional<Array> shard) {
    Array keep(DType::kU8, {nb, nh, nr, sk});
    keep.poison();
    fake::CallFrame f;
    fake::add_arg(f, key);
    add_optional(f, shard);
    fake::add_ret(f, keep);
    f.attr("dropout_p", 0.3f).string_attr("tier", "auto");
    const fake::CallResult r = fake::call(test_shard_mask_cpu, f);
    EXPECT_TRUE(r.ok()) << r.message;
    return keep;
  };
  const Array whole = mask(b, h, sq, std::nullopt);
  int64_t kept = 0;
  for (unsigned char x : whole.bytes) kept += x;
  EXPECT_GT(kept, whole.size() / 2);  // about 70% kept: not all zeros
  EXPECT_LT(kept, whole.size());
  EXPECT_TRUE(same_bits("keep {0,0,0,0}", mask(b, h, sq, int32_array({0, 0, 0, 0})), whole));
  for (const Piece& p : {Piece{1, 1, 0, h, 0, sq}, Piece{0, b, 2, 1, 0, sq},
                         Piece{0, b, 0, h, 13, 24}, Piece{1, 1, 1, 2, 5, 9}}) {
    SCOPED_TRACE(std::to_string(p.b0) + "," + std::to_string(p.h0) + "," + std::to_string(p.r0));
    // sq_total is not read by the mask: any value gives the same bits.
    for (int32_t sq_total : {0, int32_t(sq), 1000}) {
      const Array got = mask(p.nb, p.nh, p.nr,
                             int32_array({int32_t(p.b0), int32_t(p.h0), int32_t(p.r0), sq_total}));
      EXPECT_TRUE(
          same_bits("keep", got, slice(whole, {p.b0, p.h0, p.r0, 0}, {p.nb, p.nh, p.nr, sk})));
    }
  }
}

// ---- the shard operand's shape, AITER's tier
// ------------------------------------------------------

TEST(AttnShardOperand, WrongShapeIsAnErrorNamingIt) {
  const Config c{.name = "small", .b = 1, .sq = 16, .sk = 16, .hq = 2, .hk = 2, .d = 16, .dv = 16};
  for (Array bad : {Array(DType::kI32, {3}), Array(DType::kF32, {4}), Array(DType::kI32, {2, 2}),
                    Array(DType::kI32, {5})}) {
    SCOPED_TRACE(std::string(ja::name(bad.dtype)) + " rank " + std::to_string(bad.dims.size()));
    Inputs in = make_inputs(c, 1);
    Outputs o;
    fake::CallResult r = run(c, in, bad, o);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.message.find("aiter.flash_attn_fwd: operand shard: expected int32[4]"),
              std::string::npos)
        << r.message;

    // The backward alone: the forward's outputs of an unsharded call as its inputs.
    const Outputs f = run_ok(c, in, std::nullopt);
    ops::FlashAttnBwdParams bp;
    Array dout = in.dout, out = f.out, lse = f.lse, dq = f.dq, dk = f.dk, dv = f.dv,
          dbias = f.dbias;
    bp.dout = tensor(dout);
    bp.q = tensor(in.q);
    bp.k = tensor(in.k);
    bp.v = tensor(in.v);
    bp.out = tensor(out);
    bp.lse = tensor(lse);
    bp.shard = tensor(bad);
    bp.dq = tensor(dq);
    bp.dk = tensor(dk);
    bp.dv = tensor(dv);
    bp.dbias = tensor(dbias);
    const ja::Status st = ops::FlashAttnBwd::validate(bp);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("aiter.flash_attn_bwd: operand shard: expected int32[4]"),
              std::string::npos)
        << st.message();

    Array key = int32_array({1, 2}), keep(DType::kU8, {1, 2, 4, 8});
    fake::CallFrame m;
    fake::add_arg(m, key);
    fake::add_arg(m, bad);
    fake::add_ret(m, keep);
    m.attr("dropout_p", 0.5f);
    const fake::CallResult mr = fake::call(test_shard_mask_cpu, m);
    EXPECT_FALSE(mr.ok());
    EXPECT_NE(mr.message.find("aiter.attn_dropout_mask: operand shard: expected int32[4]"),
              std::string::npos)
        << mr.message;
  }
}

// AITER's v3 kernels take no shard offsets: their tier declines a call it would otherwise run
// (bf16, d = 128, causal, seqlen_q > 128), saying why, and our tier serves it with the same bits
// it gives when forced.
TEST(AttnShardOperand, AsmTierDeclinesWithTheReason) {
  const Config c{.name = "asm shape",
                 .b = 1,
                 .sq = 192,
                 .sk = 192,
                 .hq = 2,
                 .hk = 2,
                 .d = 128,
                 .dv = 128,
                 .causal = true};
  Inputs in = make_inputs(c, 21);
  Outputs o = run_ok(c, in, std::nullopt);  // buffers of the right shapes for the params
  Array shard = int32_array({0, 0, 0, 0});
  for (const ja::Arch arch : {ja::Arch::kGfx942, ja::Arch::kGfx950}) {
    const ja::Target target{ja::BackendKind::kHip, arch, arch == ja::Arch::kGfx942 ? 304 : 256};
    ops::FlashAttnFwdParams fp;
    fp.q = tensor(in.q);
    fp.k = tensor(in.k);
    fp.v = tensor(in.v);
    fp.out = tensor(o.out);
    fp.lse = tensor(o.lse);
    fp.opt.causal = true;
    fp.opt.bf16_cvt = 0;
    ASSERT_TRUE(ops::FlashAttnFwdAsmTier::supports(fp, target).ok());  // the control
    fp.shard = tensor(shard);
    const auto fv = ops::FlashAttnFwdAsmTier::supports(fp, target);
    EXPECT_FALSE(fv.ok());
    EXPECT_EQ(fv.text(), "AITER's v3 kernels take no shard offsets");
    EXPECT_TRUE(ops::FlashAttnFwdPortableTier::supports(fp, target).ok());

    ops::FlashAttnBwdParams bp;
    bp.dout = tensor(in.dout);
    bp.q = tensor(in.q);
    bp.k = tensor(in.k);
    bp.v = tensor(in.v);
    bp.out = tensor(o.out);
    bp.lse = tensor(o.lse);
    bp.dq = tensor(o.dq);
    bp.dk = tensor(o.dk);
    bp.dv = tensor(o.dv);
    bp.dbias = tensor(o.dbias);
    bp.opt.causal = true;
    bp.opt.bf16_cvt = 0;
    ASSERT_TRUE(ops::FlashAttnBwdAsmTier::supports(bp, target).ok());
    bp.shard = tensor(shard);
    const auto bv = ops::FlashAttnBwdAsmTier::supports(bp, target);
    EXPECT_FALSE(bv.ok());
    EXPECT_EQ(bv.text(), "AITER's v3 kernels take no shard offsets");
  }

  // Through the handlers: forced, the reason is the error; "auto" planned for an AMD arch runs
  // ours (the same bits as ours forced).
  Outputs forced;
  const fake::CallResult r = run(c, in, shard, forced, {"asm", "gfx950", 256});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.message.find("AITER's v3 kernels take no shard offsets"), std::string::npos)
      << r.message;
  const Outputs ours = run_ok(c, in, shard);
  for (const Tier& t : {Tier{"auto", "gfx942", 304}, Tier{"auto", "gfx950", 256}}) {
    SCOPED_TRACE(t.arch);
    const Outputs got = run_ok(c, in, shard, t);
    EXPECT_TRUE(same_bits("out", got.out, ours.out));
    EXPECT_TRUE(same_bits("lse", got.lse, ours.lse));
    EXPECT_TRUE(same_bits("dq", got.dq, ours.dq));
    EXPECT_TRUE(same_bits("dk", got.dk, ours.dk));
    EXPECT_TRUE(same_bits("dv", got.dv, ours.dv));
  }
}

}  // namespace
