"""The cuda platform (NVIDIA GPUs): cuBLASLt dense search and Triton tuning.

torch, triton and nvmath-python are imported only when a method needs them, so this package
imports on machines without a GPU (the sim platform's CI among them).
"""

from .platform import CudaPlatform

__all__ = ["CudaPlatform"]
