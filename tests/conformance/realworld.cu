// Kernels of the shapes found in NVIDIA's samples, Rodinia and HeCBench, each small enough to
// check against a C++ reference: a CSR sparse matrix-vector product with a warp per row, an
// n-body step with float4 loads and rsqrtf, and a 1-D stencil with a shared-memory halo.
// Every kernel: (unsigned* out, const unsigned* in).

// case: spmv_csr_warp_per_row grid=2 block=128 out=8
// Row r has (in[r] % 40) nonzeros; column indices and values come from the input pattern.
extern "C" __global__ void spmv_csr_warp_per_row(unsigned* out, const unsigned* in) {
  unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x & 31;
  unsigned nnz = in[warp] % 40, start = warp * 40;
  float sum = 0.0f;
  for (unsigned j = lane; j < nnz; j += 32) {
    unsigned col = in[1024 + start + j] % 64;
    float a = (float)(in[2048 + start + j] & 0xff) / 16.0f;
    float x = (float)(in[3072 + col] & 0xff) / 32.0f;
    sum += a * x;
  }
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (lane == 0) out[warp] = __float_as_uint(sum);
}

// case: nbody_accel grid=1 block=64 out=192 cmp=f32ulp:64
// One body per thread: the pull of all 64 bodies (float4 position and mass), softened, summed
// per axis as magnitudes (positive terms: the sum has no cancellation, so a GPU's approximate
// rsqrtf stays within the tolerance).
extern "C" __global__ void nbody_accel(unsigned* out, const unsigned* in) {
  __shared__ float4 body[64];
  unsigned t = threadIdx.x;
  body[t] = make_float4((float)(in[t * 4] & 0xfff) / 256.0f, (float)(in[t * 4 + 1] & 0xfff) / 256.0f,
                        (float)(in[t * 4 + 2] & 0xfff) / 256.0f, 1.0f + (float)(in[t * 4 + 3] & 0xf));
  __syncthreads();
  float4 me = body[t];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (unsigned j = 0; j < 64; ++j) {
    float4 o = body[j];
    float dx = o.x - me.x, dy = o.y - me.y, dz = o.z - me.z;
    float d2 = dx * dx + dy * dy + dz * dz + 0.01f;
    float inv = rsqrtf(d2);
    float s = o.w * inv * inv * inv;
    ax += fabsf(dx) * s;
    ay += fabsf(dy) * s;
    az += fabsf(dz) * s;
  }
  out[t * 3] = __float_as_uint(ax);
  out[t * 3 + 1] = __float_as_uint(ay);
  out[t * 3 + 2] = __float_as_uint(az);
}

// case: stencil_1d_halo grid=4 block=64 out=256
// out[i] = sum of in[i-3..i+3] (clamped at the ends), through a shared tile with a 3-wide halo.
extern "C" __global__ void stencil_1d_halo(unsigned* out, const unsigned* in) {
  __shared__ unsigned tile[64 + 6];
  int g = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
  int l = threadIdx.x + 3;
  tile[l] = in[g] & 0xffff;
  if (threadIdx.x < 3) {
    tile[l - 3] = in[max(g - 3, 0)] & 0xffff;
    tile[l + 64] = in[min(g + 64, n - 1)] & 0xffff;
  }
  __syncthreads();
  unsigned s = 0;
  for (int k = -3; k <= 3; ++k) s += tile[l + k];
  out[g] = s;
}
