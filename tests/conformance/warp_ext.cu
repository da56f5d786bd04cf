// Warp reductions and matches (sm_80): redux.sync, match.any.sync, match.all.sync.
// Every kernel: (unsigned* out, const unsigned* in).

// case: redux_ops grid=1 block=64 out=384
// Every redux.sync operation over a full warp, and over the lanes of a data-dependent branch.
extern "C" __global__ void redux_ops(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x, v = in[t];
  unsigned* o = out + t * 6;
  o[0] = __reduce_add_sync(0xffffffffu, v & 0xffff);
  o[1] = (unsigned)__reduce_min_sync(0xffffffffu, (int)v);
  o[2] = __reduce_max_sync(0xffffffffu, v);
  o[3] = __reduce_and_sync(0xffffffffu, v | 0x0f0f0f0fu);
  o[4] = __reduce_or_sync(0xffffffffu, v & 0x11111111u);
  if (v & 1) {
    o[5] = __reduce_xor_sync(__activemask(), v);
  } else {
    o[5] = __reduce_add_sync(__activemask(), 1u);
  }
}

// case: match_any_all grid=1 block=64 out=256
// Lanes grouped by a value with few distinct cases (match.any on 32 and 64 bits), and match.all
// on a value that is the same for the whole warp in one warp and not in the other.
extern "C" __global__ void match_any_all(unsigned* out, const unsigned* in) {
  unsigned t = threadIdx.x, v = in[t] & 3;
  unsigned long long w = (unsigned long long)(in[t + 64] & 1) << 40 | v;
  int pred = 0;
  unsigned same = t < 32 ? 7u : t & 1;
  unsigned* o = out + t * 4;
  o[0] = __match_any_sync(0xffffffffu, v);
  o[1] = __match_any_sync(0xffffffffu, w);
  o[2] = __match_all_sync(0xffffffffu, same, &pred);
  o[3] = pred;
}
