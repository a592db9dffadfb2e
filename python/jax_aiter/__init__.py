"""jax_aiter: AMD AITER kernels (and portable twins) as XLA FFI custom calls from JAX.

The handler libraries are found beside this package (``_jax_aiter_cpu.so``, and where built
``_jax_aiter_cuda.so`` / ``_jax_aiter_rocm.so``) and registered with XLA on first use; the targets
and their operands are learned from the libraries themselves.
"""

from jax_aiter._call import Dispatch
from jax_aiter._ffi import (JaxAiterUnavailableError, check_aiter, plan, register,
                            registered_platforms, set_aiter_root)
from jax_aiter.attention import dropout_mask, flash_attn_func, flash_attn_varlen
from jax_aiter.flatmm import flatmm_fp8
from jax_aiter.gemm import gemm
from jax_aiter.gemm_fp4 import (dequantize_mxfp4, e8m0_shuffle, e8m0_unshuffle, gemm_fp4,
                               quantize_mxfp4, shuffle_fp4_weight)
from jax_aiter.gemm_fp8 import FP8BS_LAYOUT, gemm_fp8_blockscale
from jax_aiter.gemm_fp8_mi350 import gemm_fp8_mi350
from jax_aiter.quant import (ShuffledWeight, fp8_dtype, gemm_i8, quantize_fp8_per_block,
                             quantize_fp8_per_token_block, quantize_per_channel,
                             quantize_per_token, shuffle_weight, unshuffle_weight)
from jax_aiter.rmsnorm import rms_norm, rms_norm_with_add

__version__ = "0.1.0"

__all__ = [
    "Dispatch",
    "FP8BS_LAYOUT",
    "FP8BS_LAYOUT",
    "JaxAiterUnavailableError",
    "ShuffledWeight",
    "check_aiter",
    "dequantize_mxfp4",
    "dropout_mask",
    "e8m0_shuffle",
    "e8m0_unshuffle",
    "flash_attn_func",
    "flash_attn_varlen",
    "flatmm_fp8",
    "fp8_dtype",
    "gemm",
    "gemm_fp4",
    "gemm_fp8_blockscale",
    "gemm_fp8_mi350",
    "gemm_i8",
    "plan",
    "quantize_fp8_per_block",
    "quantize_fp8_per_token_block",
    "quantize_mxfp4",
    "quantize_per_channel",
    "quantize_per_token",
    "register",
    "registered_platforms",
    "rms_norm",
    "rms_norm_with_add",
    "set_aiter_root",
    "shuffle_fp4_weight",
    "shuffle_weight",
    "unshuffle_weight",
]
