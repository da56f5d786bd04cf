// The corpus kernels of bench_cpu_device (tests/kernels/*.cu), translated line by line into OpenCL
// C 1.2 for the PoCL baseline: blockIdx/blockDim/threadIdx/gridDim become get_group_id/
// get_local_size/get_local_id/get_num_groups, __syncthreads() barrier(CLK_LOCAL_MEM_FENCE),
// __shared__ __local, atomicAdd atomic_add, __fmaf_rn fma, __expf native_exp. The only change of
// algorithm is in warp_reduce_sum: OpenCL C 1.2 has no shuffle (and PoCL 3.1 no sub-groups), so the
// 32-lane __shfl_down_sync tree is the same tree through local memory.

// vector_add.cu
__kernel void vector_add(__global const float* restrict a, __global const float* restrict b,
                         __global float* restrict c, uint n) {
  uint i = get_group_id(0) * get_local_size(0) + get_local_id(0);
  if (i < n) c[i] = a[i] + b[i];
}

// matmul.cu (16 x 16 tiles)
#define TILE 16
__kernel void matmul_tiled(__global const float* restrict a, __global const float* restrict b,
                           __global float* restrict c, uint n) {
  __local float ta[TILE][TILE], tb[TILE][TILE];
  uint tx = get_local_id(0), ty = get_local_id(1);
  uint row = get_group_id(1) * TILE + ty, col = get_group_id(0) * TILE + tx;
  float acc = 0.0f;
  for (uint t = 0; t < n / TILE; ++t) {
    ta[ty][tx] = a[row * n + t * TILE + tx];
    tb[ty][tx] = b[(t * TILE + ty) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < TILE; ++k) acc = fma(ta[ty][k], tb[k][tx], acc);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  c[row * n + col] = acc;
}

// block_reduce.cu (256 work-items per group)
__kernel void block_reduce_sum(__global const float* restrict in, __global float* restrict out, uint n) {
  __local float s[256];
  uint t = get_local_id(0), i = get_group_id(0) * get_local_size(0) + t;
  s[t] = i < n ? in[i] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint stride = get_local_size(0) / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) out[get_group_id(0)] = s[0];
}

// warp_reduce.cu (256 work-items per group). __shfl_down_sync(v, off) gives lane l the v of lane
// l + off, or its own v when l + off is past the warp's 32 lanes.
__kernel void warp_reduce_sum(__global const int* restrict in, __global int* restrict total,
                              __global int* restrict per_warp, uint n) {
  __local int lanes[256];
  uint t = get_local_id(0), i = get_group_id(0) * get_local_size(0) + t;
  int v = i < n ? in[i] : 0;
  for (int off = 16; off > 0; off >>= 1) {
    lanes[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    v += (t & 31) + off < 32 ? lanes[t + off] : v;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if ((t & 31) == 0) {
    per_warp[i / 32] = v;
    atomic_add(total, v);
  }
}

// histogram.cu (256 work-items per group)
__kernel void histogram256(__global const uchar* restrict data, uint n, __global uint* restrict bins) {
  __local uint local_bins[256];
  uint t = get_local_id(0);
  local_bins[t] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = get_group_id(0) * get_local_size(0) + t; i < n; i += get_local_size(0) * get_num_groups(0))
    atomic_add(&local_bins[data[i]], 1u);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (local_bins[t]) atomic_add(&bins[t], local_bins[t]);
}

// softmax.cu (one group per row; `red` is get_local_size(0) floats, like the dynamic shared memory)
__kernel void softmax_rows(__global const float* restrict in, __global float* restrict out, uint cols,
                           __local float* red) {
  __global const float* x = in + get_group_id(0) * cols;
  __global float* y = out + get_group_id(0) * cols;
  uint t = get_local_id(0), threads = get_local_size(0);
  float m = -INFINITY;
  for (uint j = t; j < cols; j += threads) m = fmax(m, x[j]);
  red[t] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = threads / 2; s > 0; s >>= 1) {
    if (t < s) red[t] = fmax(red[t], red[t + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  m = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  float sum = 0.0f;
  for (uint j = t; j < cols; j += threads) sum += native_exp(x[j] - m);
  red[t] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = threads / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float inv = 1.0f / red[0];
  for (uint j = t; j < cols; j += threads) y[j] = native_exp(x[j] - m) * inv;
}

// saxpy.cu (grid-stride loop)
__kernel void saxpy(uint n, float a, __global const float* restrict x, __global float* restrict y) {
  for (uint i = get_group_id(0) * get_local_size(0) + get_local_id(0); i < n; i += get_local_size(0) * get_num_groups(0))
    y[i] = a * x[i] + y[i];
}
