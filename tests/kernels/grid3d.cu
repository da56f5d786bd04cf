// Every thread of a 3-D grid of 3-D blocks writes its linear id at its global (x, y, z) position.
extern "C" __global__ void grid3d(unsigned* __restrict__ out, unsigned nx, unsigned ny, unsigned nz) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x >= nx || y >= ny || z >= nz) return;
  unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  out[(z * ny + y) * nx + x] = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
}
