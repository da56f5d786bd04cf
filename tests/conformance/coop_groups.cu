#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_pipeline.h>
// Cooperative groups: tiles wider than a warp synchronise through the CTA's reserved shared
// memory (%reserved_smem_offset_*) with a spin barrier between warps, which needs every warp to
// make progress while another waits. Every kernel: (unsigned* out, const unsigned* in).
namespace cg = cooperative_groups;

// case: tile64_tree grid=2 block=128 out=256
// A shared-memory tree inside each 64-thread tile, tile.sync() between the steps.
extern "C" __global__ void tile64_tree(unsigned* out, const unsigned* in) {
  cg::thread_block block = cg::this_thread_block();
  auto tile = cg::tiled_partition<64>(block);
  __shared__ unsigned s[128];
  unsigned t = threadIdx.x, base = tile.meta_group_rank() * 64, r = tile.thread_rank();
  s[t] = in[blockIdx.x * 128 + t] & 0xffff;
  tile.sync();
  for (unsigned off = 32; off > 0; off >>= 1) {
    unsigned v = r < off ? s[base + r + off] : 0;
    tile.sync();
    if (r < off) s[base + r] += v;
    tile.sync();
  }
  out[blockIdx.x * 128 + t] = s[base] ^ (r << 24) ^ (tile.num_threads() << 18);
}

// case: tile32_shfl_reduce grid=1 block=96 out=96
// A warp-sized tile's own shuffle reduction (cg::thread_block_tile<32>::shfl_down).
extern "C" __global__ void tile32_shfl_reduce(unsigned* out, const unsigned* in) {
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  unsigned v = in[threadIdx.x] & 0xfffff;
  for (unsigned off = tile.size() / 2; off > 0; off /= 2) v += tile.shfl_down(v, off);
  out[threadIdx.x] = tile.thread_rank() == 0 ? v : tile.meta_group_rank();
}

// case: async_copies grid=2 block=64 out=512
// Asynchronous copies into shared memory (cp.async): the pipeline primitives, with a zero fill
// of the bytes past src-size, and cooperative groups' memcpy_async of a whole block.
extern "C" __global__ void async_copies(unsigned* out, const unsigned* in) {
  __shared__ __align__(16) unsigned s[256];
  __shared__ __align__(16) unsigned z[64];
  __shared__ unsigned whole[256];
  const unsigned t = threadIdx.x, base = blockIdx.x * 256;
  __pipeline_memcpy_async(&s[t * 4], &in[base + t * 4], 16);
  __pipeline_memcpy_async(&z[t], &in[base + 1024 + t], 4, (t % 3) * 2);  // zero-fill 0, 2 or 4 bytes
  __pipeline_commit();
  cg::thread_block block = cg::this_thread_block();
  cg::memcpy_async(block, whole, in + 2048 + base, sizeof(unsigned) * 256);
  __pipeline_wait_prior(0);
  cg::wait(block);
  unsigned* o = out + blockIdx.x * 256;
  o[t] = s[255 - t] ^ whole[t];
  o[64 + t] = z[t];
  o[128 + t] = s[t * 4 + 1] + whole[255 - t];
  o[192 + t] = whole[t * 4 + 3];
}
