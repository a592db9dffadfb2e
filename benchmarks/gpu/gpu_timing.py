"""Timing on a GPU through JAX, shared by the benchmarks (method: ../../.library/device/METHOD.md).

  device_timed  the GPU's own timestamps of every kernel of R calls (CUPTI through JAX's
                profiler, the same clock CUDA events read): the median span of a call / k, and
                each kernel's share
  timed         host wall time of a call up to block_until_ready / k (launch overhead included)
  copy_bandwidth_events  a device-to-device copy timed with CUDA events, the bandwidth ceiling
"""
import ctypes
import statistics
import time

import jax

K = 4   # input sets per timed call (rotated, together larger than L2)
R = 30  # timed calls


def device_timed(fn, args, k):
    """Median over R calls of the device span of one call / k, from the profiler's kernel records.

    Kernels of the GPU plane's stream lines are grouped into calls by the idle gaps between calls
    (each call ends with block_until_ready, so the device idles while the host starts the next).
    Returns (seconds per op, {kernel name: its seconds per op}), or (None, {}) if the grouping
    fails (the kernels seen are printed).
    """
    from jax._src.lib import _profiler
    jax.block_until_ready(fn(*args))
    session = _profiler.ProfilerSession()
    for _ in range(R):
        jax.block_until_ready(fn(*args))
        time.sleep(0.002)  # a clear idle gap between calls on the device timeline
    data = jax.profiler.ProfileData.from_serialized_xspace(session.stop())
    kernels = []
    for plane in data.planes:
        if not plane.name.startswith("/device:GPU"):
            continue
        for line in plane.lines:
            if line.name.startswith("Stream"):  # skip derived lines (XLA Ops, Modules, Steps)
                kernels += [(e.start_ns, e.start_ns + e.duration_ns, e.name) for e in line.events]
    kernels.sort()
    names = sorted({name for *_, name in kernels})
    if not kernels:
        return None, {}
    calls = [[kernels[0][0], kernels[0][1]]]
    for start, end, _ in kernels[1:]:
        if start - calls[-1][1] > 1_000_000:  # > 1 ms idle (the calls are 2 ms apart): the next call
            calls.append([start, end])
        else:
            calls[-1][1] = max(calls[-1][1], end)
    if len(calls) != R:
        print(f"  (device timing: found {len(calls)} calls, expected {R}; kernels {names})")
        return None, {}
    # Each kernel's own time per op (median over calls of its summed durations, / k): where the
    # time of a multi-kernel op goes.
    per_kernel = {}
    for name in names:
        sums = [sum(e - s for s, e, nm in kernels if nm == name and c0 <= s <= c1) for c0, c1 in calls]
        per_kernel[name] = statistics.median(sums) * 1e-9 / k
    return statistics.median((e - s) * 1e-9 for s, e in calls) / k, per_kernel


def copy_bandwidth_events(nbytes):
    """Device-to-device copy bandwidth (read + write) timed with CUDA events via the driver API."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None

    def ok(r):
        if r != 0:
            raise RuntimeError(f"CUDA driver error {r}")

    ctx, dev = ctypes.c_void_p(), ctypes.c_int()
    ok(cu.cuInit(0))
    ok(cu.cuDeviceGet(ctypes.byref(dev), 0))
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    ok(cu.cuCtxPushCurrent_v2(ctx))
    bufs = [ctypes.c_uint64() for _ in range(2 * K)]
    for b in bufs:
        ok(cu.cuMemAlloc_v2(ctypes.byref(b), ctypes.c_size_t(nbytes)))
    a, b = ctypes.c_void_p(), ctypes.c_void_p()
    ok(cu.cuEventCreate(ctypes.byref(a), 0))
    ok(cu.cuEventCreate(ctypes.byref(b), 0))
    ts = []
    for i in range(R + 3):
        src, dst = bufs[2 * (i % K)], bufs[2 * (i % K) + 1]
        ok(cu.cuEventRecord(a, None))
        ok(cu.cuMemcpyDtoDAsync_v2(dst, src, ctypes.c_size_t(nbytes), None))
        ok(cu.cuEventRecord(b, None))
        ok(cu.cuEventSynchronize(b))
        ms = ctypes.c_float()
        ok(cu.cuEventElapsedTime(ctypes.byref(ms), a, b))
        if i >= 3:
            ts.append(ms.value * 1e-3)
    for buf in bufs:
        ok(cu.cuMemFree_v2(buf))
    ok(cu.cuEventDestroy_v2(a))
    ok(cu.cuEventDestroy_v2(b))
    ok(cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())))
    ok(cu.cuDevicePrimaryCtxRelease_v2(dev))
    return 2 * nbytes / statistics.median(ts)


def timed(fn, args, k):
    out = fn(*args)
    jax.block_until_ready(out)
    out = fn(*args)
    jax.block_until_ready(out)
    times = []
    for _ in range(R):
        t0 = time.perf_counter()
        out = fn(*args)
        jax.block_until_ready(out)
        times.append((time.perf_counter() - t0) / k)
    return statistics.median(times), (max(times) - min(times))
