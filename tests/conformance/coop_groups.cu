#include <cooperative_groups.h>
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
