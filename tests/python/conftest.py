"""pytest setup for the Python package tests.

The shard_map test needs several devices; on CPU, XLA makes them when this flag is set before jax
initialises its backends, so it is set here, before any test module imports jax. The flag only
affects the host platform: on a GPU machine the tests still run on the GPU (JAX's default backend).

jax_aiter itself is found through PYTHONPATH (ctest sets it to the build tree's python/ folder) or
an installed wheel; nothing here points at a build.
"""

import os

_FLAG = "--xla_force_host_platform_device_count=4"
if _FLAG.split("=")[0] not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
