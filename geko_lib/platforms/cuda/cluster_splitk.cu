// geko's cluster split-K decode GEMM (sm_90a), compiled at run time by NVRTC with the
// compile-time parameters of cluster_gemm.ClusterConfig.defines(); what it does and why:
// cluster_source.py beside this file. nvcc builds it too, given the same -D parameters:
//   nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -DGEKO_WARPS_M=2 -DGEKO_WARPS_N=1 \
//        -DGEKO_FRAG_M=1 -DGEKO_FRAG_N=1 -DGEKO_BLOCK_K=128 -DGEKO_STAGES=4 -DGEKO_FP16=0 \
//        cluster_splitk.cu
#ifndef GEKO_WARPS_M
#error "GEKO_WARPS_M, GEKO_WARPS_N, GEKO_FRAG_M, GEKO_FRAG_N, GEKO_BLOCK_K, GEKO_STAGES, GEKO_FP16 are compile-time parameters"
#endif
#ifndef GEKO_ABLATE
#define GEKO_ABLATE 0  // benchmarks only: 1 leaves out the cluster's reduction, 2 the MMAs;
                      // tests only: 3 reads the activations before the grid dependency wait
#endif
#define BM (GEKO_WARPS_M * 16 * GEKO_FRAG_M)
#define NT (GEKO_WARPS_N * 8 * GEKO_FRAG_N)
#define BOX_K 64
#define BOXES (GEKO_BLOCK_K / BOX_K)
#define BOX_BYTES ((BM + NT) * 128)
#define STAGE_BYTES (BOXES * BOX_BYTES)
#define CONSUMERS (GEKO_WARPS_M * GEKO_WARPS_N)
#define THREADS ((CONSUMERS + 1) * 32)
#define PIPE_BYTES (GEKO_STAGES * STAGE_BYTES)
#define PART_BYTES (BM * NT * 4)
#define BAR_OFFSET ((((PIPE_BYTES > PART_BYTES) ? PIPE_BYTES : PART_BYTES) + 15) / 16 * 16)

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ u32 smem_addr(const void* p) {
    return (u32)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    u32 done = 0;
    while (!done) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    }
}
// one box of a 2-D tensor map (coordinates: K element, row) into shared memory
__device__ __forceinline__ void tma_load(u32 dst, const void* map, int k, int row, u32 bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"(map), "r"(k), "r"(row), "r"(bar) : "memory");
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// programmatic dependent launch (no-ops in a grid launched without it): the kernel before may
// still run until wait returns; launch_dependents lets the kernel after start early
__device__ __forceinline__ void grid_dependency_wait() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
__device__ __forceinline__ u32 cluster_rank() {
    u32 r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ u32 cluster_size() {
    u32 r; asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ u32 cluster_id_x() {
    u32 r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r;
}
__device__ __forceinline__ float4 load_remote(u32 local, u32 rank) {
    u32 remote; float4 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
    return v;
}
__device__ __forceinline__ void ldm_x4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void ldm_x2(u32 addr, u32& r0, u32& r1) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void mma(float* c, const u32* a, u32 b0, u32 b1) {
#if GEKO_FP16
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#endif
                 " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ u32 pack2(float lo, float hi) {
    u32 r;
#if GEKO_FP16
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}
// byte offset of (row, 16-byte chunk) in a box of 128-byte rows under the 128-byte swizzle
__device__ __forceinline__ u32 swizzled(int row, int chunk) {
    return (u32)(row * 128 + ((chunk ^ (row & 7)) << 4));
}

// a CUtensorMap's 128 opaque bytes (no header is included)
struct __align__(64) TensorMap { u64 words[16]; };

// map_w, map_x: the tensor maps of W (M x K, box BM rows) and X (N x K, box NT rows), passed
// by value (no device memory to write, no copy before the launch in a CUDA graph).
// grid: M / BM clusters of CS CTAs along x, ceil(N / NT) along y.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
geko_cluster_splitk(const __grid_constant__ TensorMap map_w_param,
                    const __grid_constant__ TensorMap map_x_param, u16* __restrict__ d,
                    int M, int N, int K, long long ldd) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    // the 128-byte swizzle repeats every 1024 bytes: boxes start on 1024-byte boundaries
    const u32 raw = smem_addr(smem_raw), base = (raw + 1023) & ~1023u;
    unsigned char* smem = smem_raw + (base - raw);
    const u32 full = base + BAR_OFFSET, empty = full + 8 * GEKO_STAGES;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int rank = (int)cluster_rank(), cs = (int)cluster_size();
    const int m0 = (int)cluster_id_x() * BM, n0 = blockIdx.y * NT;
    const int kblocks = K / GEKO_BLOCK_K, per = (kblocks + cs - 1) / cs;
    const int kb0 = rank * per;
    const int nk = max(0, min(kblocks, kb0 + per) - kb0);
    const void* map_w = &map_w_param;
    const void* map_x = &map_x_param;

    if (threadIdx.x == 0) {
        for (int s = 0; s < GEKO_STAGES; ++s) {
            mbar_init(full + 8 * s, 1);
            mbar_init(empty + 8 * s, CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(map_w) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"(map_x) : "memory");
    }
    __syncthreads();
    launch_dependents();  // they wait for this grid's completion before reading its output

    float acc[GEKO_FRAG_M][GEKO_FRAG_N][4];
#pragma unroll
    for (int i = 0; i < GEKO_FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < GEKO_FRAG_N; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    const int warp_m = warp % GEKO_WARPS_M, warp_n = warp / GEKO_WARPS_M;

    if (warp == CONSUMERS) {  // the producer
        if (lane == 0) {
            // the weights do not depend on the kernel before this one: the first stages'
            // weight boxes are in flight before the grid dependency wait, the token panel's
            // only after it (one mbarrier per stage counts both)
            const int early = min(nk, GEKO_STAGES);
            for (int i = 0; i < early; ++i) {
                mbar_expect(full + 8 * i, STAGE_BYTES);
                const int k = (kb0 + i) * GEKO_BLOCK_K;
#pragma unroll
                for (int b = 0; b < BOXES; ++b)
                    tma_load(base + i * STAGE_BYTES + b * BOX_BYTES, map_w, k + b * BOX_K, m0,
                             full + 8 * i);
            }
            if (GEKO_ABLATE != 3) grid_dependency_wait();
            for (int i = 0; i < early; ++i) {
                const int k = (kb0 + i) * GEKO_BLOCK_K;
#pragma unroll
                for (int b = 0; b < BOXES; ++b)
                    tma_load(base + i * STAGE_BYTES + b * BOX_BYTES + BM * 128, map_x,
                             k + b * BOX_K, n0, full + 8 * i);
            }
            for (int i = early; i < nk; ++i) {
                const int s = i % GEKO_STAGES;
                mbar_wait(empty + 8 * s, ((i / GEKO_STAGES) - 1) & 1);
                mbar_expect(full + 8 * s, STAGE_BYTES);
                const int k = (kb0 + i) * GEKO_BLOCK_K;
                const u32 stage = base + s * STAGE_BYTES;
#pragma unroll
                for (int b = 0; b < BOXES; ++b) {
                    tma_load(stage + b * BOX_BYTES, map_w, k + b * BOX_K, m0, full + 8 * s);
                    tma_load(stage + b * BOX_BYTES + BM * 128, map_x, k + b * BOX_K, n0,
                             full + 8 * s);
                }
            }
        }
    } else {
        // ldmatrix rows: A (weights) 16 rows x 16 k per fragment, B (tokens) 8 x 16; the
        // swizzle's row term (row & 7) is lane & 7 for both
        const int a_row = warp_m * 16 * GEKO_FRAG_M + lane % 16, a_half = lane / 16;
#if GEKO_FRAG_N % 2 == 0
        const int b_row = warp_n * 8 * GEKO_FRAG_N + lane % 8 + (lane / 16) * 8;
#else
        const int b_row = warp_n * 8 * GEKO_FRAG_N + lane % 8;
#endif
        const int b_half = (lane / 8) % 2;
        for (int i = 0; i < nk; ++i) {
            const int s = i % GEKO_STAGES;
            mbar_wait(full + 8 * s, (i / GEKO_STAGES) & 1);
            const u32 stage = base + s * STAGE_BYTES;
#pragma unroll
            for (int kk = 0; kk < GEKO_BLOCK_K / 16; ++kk) {
                const u32 box = stage + (kk / 4) * BOX_BYTES;
                const int chunk = (kk % 4) * 2;
                u32 a[GEKO_FRAG_M][4], b[GEKO_FRAG_N][2];
#pragma unroll
                for (int fm = 0; fm < GEKO_FRAG_M; ++fm)
                    ldm_x4(box + swizzled(a_row + fm * 16, chunk + a_half),
                           a[fm][0], a[fm][1], a[fm][2], a[fm][3]);
#if GEKO_FRAG_N % 2 == 0
#pragma unroll
                for (int fn = 0; fn < GEKO_FRAG_N; fn += 2)
                    ldm_x4(box + BM * 128 + swizzled(b_row + fn * 8, chunk + b_half),
                           b[fn][0], b[fn][1], b[fn + 1][0], b[fn + 1][1]);
#else
#pragma unroll
                for (int fn = 0; fn < GEKO_FRAG_N; ++fn)
                    ldm_x2(box + BM * 128 + swizzled(b_row + fn * 8, chunk + b_half),
                           b[fn][0], b[fn][1]);
#endif
#pragma unroll
                for (int fm = 0; fm < GEKO_FRAG_M; ++fm)
#pragma unroll
                    for (int fn = 0; fn < GEKO_FRAG_N; ++fn)
                        if (GEKO_ABLATE != 2) mma(acc[fm][fn], a[fm], b[fn][0], b[fn][1]);
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(empty + 8 * s);
        }
    }
    __syncthreads();  // every copy has landed and been read: the ring becomes the partial tile
    grid_dependency_wait();  // D is written only once the kernel before has finished

    float* part = (float*)smem;  // [NT tokens][BM rows], fp32
    if (warp < CONSUMERS) {
#pragma unroll
        for (int fm = 0; fm < GEKO_FRAG_M; ++fm)
#pragma unroll
            for (int fn = 0; fn < GEKO_FRAG_N; ++fn)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int m = warp_m * 16 * GEKO_FRAG_M + fm * 16 + lane / 4 + (e / 2) * 8;
                    const int n = warp_n * 8 * GEKO_FRAG_N + fn * 8 + (lane % 4) * 2 + (e % 2);
                    part[n * BM + m] = acc[fm][fn][e];
                }
    }
    // every CTA's partial is in its shared memory (a cluster of one needs only its own CTA's
    // barrier: the cluster barrier cost 0.6 us a call there, bench/RESULTS.md)
    if (GEKO_ABLATE != 1 && cs > 1) cluster_sync(); else __syncthreads();

    const int tokens = min(NT, N - n0);
    const int quads = tokens * BM / 4, share = (quads + cs - 1) / cs;
    const int stop = min(quads, (rank + 1) * share);
    for (int q = rank * share + (int)threadIdx.x; q < stop; q += THREADS) {
        const int n = (q * 4) / BM, m = (q * 4) % BM;
        if (m0 + m >= M) continue;
        const u32 local = base + (u32)(q * 16);
        float4 sum = load_remote(local, GEKO_ABLATE == 1 ? rank : 0);
        for (int r = 1; r < (GEKO_ABLATE == 1 ? 1 : cs); ++r) {
            const float4 v = load_remote(local, (u32)r);
            sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
        }
        uint2 out = make_uint2(pack2(sum.x, sum.y), pack2(sum.z, sum.w));
        *(uint2*)(d + (long long)(n0 + n) * ldd + m0 + m) = out;
    }
    if (GEKO_ABLATE != 1 && cs > 1) cluster_sync();  // none leaves while another reads it
}
