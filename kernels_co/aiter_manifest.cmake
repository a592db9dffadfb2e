# AITER's hand-written code objects, by op and arch: JAX_AITER_ASM_<op>_<arch> lists paths under
# <AITER>/hsa/<arch>/ (origin: github.com/ROCm/aiter at e4048607a535, hsa/<arch>/<family>/*.csv).
# jax_aiter_embed_kernels() embeds them when -DJAX_AITER_AITER_ROOT points at a checkout; they are
# never part of this repository. An op with no list here runs on our portable kernels.
#
# rmsnorm: AITER ships no ASM RMSNorm; our portable kernels serve every arch.
