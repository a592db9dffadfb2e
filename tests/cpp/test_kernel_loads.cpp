// The sm_90 PTX of our RMSNorm kernels. Every kernel waits for the stream's previous grid before
// it touches memory (the backend launches it as a programmatic dependent). Every global load of a
// kernel built for vectors of V elements moves at least V elements at once. A pack bound to a const
// reference straight from global memory made nvcc read it element by element (8 16-bit loads for
// one 16-byte vector), which cost the streamed backward 7-9 % on H100; this test keeps that from
// coming back.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "jax_aiter/kernels/rmsnorm.hpp"

namespace {

// Kernel name -> its PTX body.
std::map<std::string, std::string> ptx_entries(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::map<std::string, std::string> out;
  const std::regex entry(R"(\.entry\s+(\w+)\s*\()");
  std::vector<std::pair<std::string, size_t>> starts;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry);
       it != std::sregex_iterator(); ++it) {
    starts.emplace_back((*it)[1].str(), static_cast<size_t>(it->position()));
  }
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1].second : text.size();
    out[starts[k].first] = text.substr(starts[k].second, end - starts[k].second);
  }
  return out;
}

// Bytes one PTX load moves: ld.global[.qualifiers][.v2|.v4].<type>, e.g. ld.global.cs.v4.u32.
int load_bytes(const std::string& op) {
  int lanes = 1;
  if (op.find(".v2.") != std::string::npos) lanes = 2;
  if (op.find(".v4.") != std::string::npos) lanes = 4;
  static const std::regex type(R"(\.[bfsu](8|16|32|64)$)");
  std::smatch m;
  if (!std::regex_search(op, m, type)) return 0;
  return lanes * std::stoi(m[1].str()) / 8;
}

}  // namespace

TEST(KernelLoads, EveryGlobalLoadMovesAWholeVector) {
  const auto entries = ptx_entries(JAX_AITER_TEST_RMSNORM_PTX);
  ASSERT_FALSE(entries.empty()) << "no .entry in " << JAX_AITER_TEST_RMSNORM_PTX;
  const std::regex vector_kernel(R"(jax_aiter_rmsnorm_\w+_(bf16|f16|f32)_v(\d))");
  const std::regex load(R"(\bld\.global[\w.:]*)");
  int checked = 0;
  for (const jax_aiter::kernels::KernelInfo* info : jax_aiter::kernels::kRmsNormKernels) {
    const std::string symbol(info->symbol);
    std::smatch m;
    if (!std::regex_match(symbol, m, vector_kernel)) continue;  // the dgamma reductions
    const auto it = entries.find(symbol);
    ASSERT_NE(it, entries.end()) << symbol << " is not in the PTX";
    const int vector_bytes = std::stoi(m[2].str()) * (m[1].str() == "f32" ? 4 : 2);
    int loads = 0;
    const std::string& body = it->second;
    for (auto l = std::sregex_iterator(body.begin(), body.end(), load); l != std::sregex_iterator();
         ++l, ++loads) {
      EXPECT_GE(load_bytes(l->str()), vector_bytes) << symbol << ": " << l->str();
    }
    EXPECT_GT(loads, 0) << symbol;
    ++checked;
  }
  EXPECT_EQ(checked, 55);  // 11 each: forward, fused forward, backward, split and streamed backward
}

// The CUDA backend launches every kernel with programmatic stream serialisation, so a kernel may
// start before the stream's previous kernel has finished writing its inputs: it must execute
// griddepcontrol.wait before its first global memory access (a load, store, atomic or bulk copy).
TEST(KernelLoads, EveryKernelWaitsForThePreviousGridBeforeTouchingMemory) {
  const auto entries = ptx_entries(JAX_AITER_TEST_RMSNORM_PTX);
  ASSERT_FALSE(entries.empty()) << "no .entry in " << JAX_AITER_TEST_RMSNORM_PTX;
  const std::regex memory(R"(\b((ld|st|atom|red)\.global|cp\.async)[\w.:]*)");
  int checked = 0;
  for (const jax_aiter::kernels::KernelInfo* info : jax_aiter::kernels::kRmsNormKernels) {
    const std::string symbol(info->symbol);
    const auto it = entries.find(symbol);
    ASSERT_NE(it, entries.end()) << symbol << " is not in the PTX";
    const std::string& body = it->second;
    const size_t wait = body.find("griddepcontrol.wait");
    ASSERT_NE(wait, std::string::npos) << symbol << " never waits for the previous grid";
    std::smatch first;
    ASSERT_TRUE(std::regex_search(body, first, memory)) << symbol << " touches no global memory";
    EXPECT_LT(wait, static_cast<size_t>(first.position()))
        << symbol << ": " << first.str() << " before griddepcontrol.wait";
    EXPECT_NE(body.find("griddepcontrol.launch_dependents"), std::string::npos) << symbol;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(jax_aiter::kernels::kRmsNormKernels.size()));
}
