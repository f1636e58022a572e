"""The CUDA C++ source of the cluster split-K decode GEMM (compiled by ``cluster_gemm``).

D (N x M, row-major: tokens x output features) = X (N x K) . W^T, W (M x K) as stored: the
decode shape of a linear layer, weights K-contiguous, few tokens. A thread-block cluster of CS
CTAs shares one BM x NT output tile; each CTA streams its 1/CS of K through a ring of STAGES
shared-memory buffers filled by the tensor memory accelerator (cp.async.bulk.tensor on
host-encoded tensor maps passed as kernel parameters, 64-element boxes with the 128-byte
swizzle, so the tensor cores' ldmatrix reads are free of bank conflicts; each stage
completes on an mbarrier), multiplies on the tensor cores (mma.sync m16n8k16, fp32 accumulators), parks its partial tile in its own
shared memory, and after a cluster barrier every CTA sums a 1/CS share of the tile over the
cluster's shared memories (distributed shared memory: mapa + ld.shared::cluster), in rank
order, and writes it. Launched with programmatic dependent launch (``cluster_gemm.Launch``),
the producer issues the first stages' weight copies before ``griddepcontrol.wait`` and the
token panel's after it, every thread waits before D is written, and each CTA lets the next
kernel launch (``griddepcontrol.launch_dependents``) once it has started. No global atomics,
no counters, no workspace: the result does not depend on the order the CTAs ran in. Rows past
M or N are the tensor maps' zero fill.

One thread of a producer warp issues the copies, WARPS_M x WARPS_N warps consume; every shape
parameter is a macro defined at compile time (``ClusterConfig.defines``). No header is
included, so NVRTC needs nothing beyond itself: PTX stands in for cooperative_groups and
cuda_bf16.h.

(A first version copied one weight row of BLOCK_K elements per cp.async.bulk: correct, but
on the H200 its time followed the number of copies, about 60 cycles each per SM, not the bytes:
14.9 us for the 1280 x 1 x 8192 shard whose floor is 6.3 us; bench/RESULTS.md.)
"""

from importlib import resources

KERNEL_NAME = "geko_cluster_splitk"
BOX_K = 64  # K elements of one tensor-map box: 128 bytes, the 128-byte swizzle's span

# the CUDA C++ itself, in a file an editor and nvcc open (package data: setup.py)
SOURCE = resources.files(__package__).joinpath("cluster_splitk.cu").read_text()
