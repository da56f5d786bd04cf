/* The engine benchmark's workload, compiled as a guest and natively (bench/CMakeLists.txt: -O2,
 * -O2 -march=native as a user would build it, and the latter without auto-vectorisation, the
 * closest native analogue of MVP wasm). Each bench_* does a fixed amount of deterministic work and returns a checksum, so the builds can be
 * checked to compute the same thing. Ten programs of the kinds guests run: sorting, hashing,
 * dense float math, a recursive-descent parser, table-driven CRC, double-precision simulation,
 * LZ77 compression, shortest paths on a heap, bignum multiplication and a word-count hash table.
 * Freestanding: no libc, no imports. */
#include <stdint.h>

/* PROGRAM(x) starts the definition of bench_x, exported under that name from the guest. A native
 * build may set WORKLOAD_PREFIX so that several builds link into one program (march_bench_x). */
#ifndef WORKLOAD_PREFIX
#define WORKLOAD_PREFIX
#endif
#define WORKLOAD_CAT2(a, b) a##b
#define WORKLOAD_CAT(a, b) WORKLOAD_CAT2(a, b)
#ifdef __wasm__
#define EXPORT(name) __attribute__((export_name(#name)))
#else
#define EXPORT(name)
#endif
#define PROGRAM(name) EXPORT(bench_##name) int32_t WORKLOAD_CAT(WORKLOAD_PREFIX, bench_##name)(void)

#define N 160
static float A[N * N], B[N * N], C[N * N];

PROGRAM(matmul) {
  uint32_t s = 1;
  for (int i = 0; i < N * N; i++) {
    s = s * 1664525u + 1013904223u;
    A[i] = (float)(s >> 16) / 65536.0f;
    s = s * 1664525u + 1013904223u;
    B[i] = (float)(s >> 16) / 65536.0f;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < N; k++) acc += A[i * N + k] * B[k * N + j];
      C[i * N + j] = acc;
    }
  union { float f; uint32_t u; } u = {C[N * N / 2 + 7]};
  return (int32_t)u.u;
}

#define M 40000
static int32_t V[M];
static void sort(int32_t* a, int lo, int hi) {
  while (hi - lo > 16) {
    int32_t p = a[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (a[i] < p) i++;
      while (a[j] > p) j--;
      if (i <= j) { int32_t t = a[i]; a[i] = a[j]; a[j] = t; i++; j--; }
    }
    if (j - lo < hi - i) { sort(a, lo, j); lo = i; } else { sort(a, i, hi); hi = j; }
  }
  for (int i = lo + 1; i <= hi; i++) {
    int32_t v = a[i];
    int j = i - 1;
    while (j >= lo && a[j] > v) { a[j + 1] = a[j]; j--; }
    a[j + 1] = v;
  }
}

PROGRAM(sort) {
  uint32_t s = 7;
  for (int i = 0; i < M; i++) { s ^= s << 13; s ^= s >> 17; s ^= s << 5; V[i] = (int32_t)s; }
  sort(V, 0, M - 1);
  return V[M / 3] ^ V[M - 1];
}

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* A SHA-256-style compression loop over generated data: integer, rotate and memory heavy. */
PROGRAM(hash) {
  static uint32_t w[64];
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  for (uint32_t block = 0; block < 24000; block++) {
    for (int i = 0; i < 16; i++) w[i] = block * 2654435761u + (uint32_t)i * 40503u;
    for (int i = 16; i < 64; i++) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
      uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + w[i] + 0x428a2f98u * (uint32_t)i;
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
  return (int32_t)(h[0] ^ h[7]);
}

/* Deterministic generator shared by the programs below. */
static uint32_t g_rng;
static uint32_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 17;
  g_rng ^= g_rng << 5;
  return g_rng;
}

/* A recursive-descent parser and evaluator over generated arithmetic text: byte-at-a-time
 * scanning, deep calls and unpredictable branches. */
#define EXPR_BYTES (192 * 1024)
static char expr_text[EXPR_BYTES + 64];
static uint32_t expr_len, expr_pos;

static void gen_expr(int depth) {
  if (expr_len > EXPR_BYTES - 64) { expr_text[expr_len++] = '1'; return; }
  uint32_t r = rnd();
  if (depth > 12 || (r & 3) == 0) {
    uint32_t v = (r >> 8) % 100000u;
    char digits[12];
    int n = 0;
    do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v != 0);
    while (n > 0) expr_text[expr_len++] = digits[--n];
    return;
  }
  if ((r & 12) == 0) {
    expr_text[expr_len++] = '(';
    gen_expr(depth + 1);
    expr_text[expr_len++] = ')';
    return;
  }
  gen_expr(depth + 1);
  expr_text[expr_len++] = ' ';
  expr_text[expr_len++] = "+-*/"[(r >> 4) & 3];
  expr_text[expr_len++] = ' ';
  gen_expr(depth + 1);
}

static void skip_space(void) { while (expr_text[expr_pos] == ' ') expr_pos++; }
static uint32_t parse_sum(void);
static uint32_t parse_atom(void) {
  skip_space();
  if (expr_text[expr_pos] == '(') {
    expr_pos++;
    uint32_t v = parse_sum();
    skip_space();
    expr_pos++; /* ')' */
    return v;
  }
  uint32_t v = 0;
  while (expr_text[expr_pos] >= '0' && expr_text[expr_pos] <= '9') v = v * 10 + (uint32_t)(expr_text[expr_pos++] - '0');
  return v;
}
static uint32_t parse_product(void) {
  uint32_t v = parse_atom();
  for (;;) {
    skip_space();
    char op = expr_text[expr_pos];
    if (op != '*' && op != '/') return v;
    expr_pos++;
    uint32_t rhs = parse_atom();
    v = op == '*' ? v * rhs : v / (rhs | 1);
  }
}
static uint32_t parse_sum(void) {
  uint32_t v = parse_product();
  for (;;) {
    skip_space();
    char op = expr_text[expr_pos];
    if (op != '+' && op != '-') return v;
    expr_pos++;
    uint32_t rhs = parse_product();
    v = op == '+' ? v + rhs : v - rhs;
  }
}

PROGRAM(parse) {
  g_rng = 12345;
  expr_len = 0;
  uint32_t sum = 0;
  while (expr_len < EXPR_BYTES - 256) {
    if (expr_len != 0) { expr_text[expr_len++] = ' '; expr_text[expr_len++] = '+'; expr_text[expr_len++] = ' '; }
    gen_expr(0);
  }
  expr_text[expr_len] = 0;
  for (int pass = 0; pass < 6; pass++) {
    expr_pos = 0;
    sum = sum * 31 + parse_sum();
  }
  return (int32_t)(sum ^ expr_pos);
}

/* Table-driven CRC-32 (the zlib polynomial) over a generated buffer: a load-dependent table
 * lookup per byte. */
#define CRC_BYTES (512 * 1024)
static uint8_t crc_buf[CRC_BYTES];
static uint32_t crc_table[256];

PROGRAM(crc32) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    crc_table[i] = c;
  }
  g_rng = 99;
  for (uint32_t i = 0; i < CRC_BYTES; i++) crc_buf[i] = (uint8_t)rnd();
  uint32_t out = 0;
  for (int pass = 0; pass < 8; pass++) {
    uint32_t c = 0xffffffffu ^ (uint32_t)pass;
    for (uint32_t i = 0; i < CRC_BYTES; i++) c = crc_table[(c ^ crc_buf[i]) & 0xff] ^ (c >> 8);
    out = out * 31 + (c ^ 0xffffffffu);
  }
  return (int32_t)out;
}

/* The n-body simulation of the Computer Language Benchmarks Game (five bodies, double
 * precision, a square root per pair). */
struct body { double x, y, z, vx, vy, vz, mass; };

PROGRAM(nbody) {
  const double pi = 3.141592653589793, days = 365.24, solar = 4 * pi * pi;
  struct body b[5] = {
      {0, 0, 0, 0, 0, 0, solar},
      {4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01, 1.66007664274403694e-03 * days,
       7.69901118419740425e-03 * days, -6.90460016972063023e-05 * days, 9.54791938424326609e-04 * solar},
      {8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01, -2.76742510726862411e-03 * days,
       4.99852801234917238e-03 * days, 2.30417297573763929e-05 * days, 2.85885980666130812e-04 * solar},
      {1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01, 2.96460137564761618e-03 * days,
       2.37847173959480950e-03 * days, -2.96589568540237556e-05 * days, 4.36624404335156298e-05 * solar},
      {1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01, 2.68067772490389322e-03 * days,
       1.62824170038242295e-03 * days, -9.51592254519715870e-05 * days, 5.15138902046611451e-05 * solar}};
  for (int step = 0; step < 60000; step++) {
    for (int i = 0; i < 5; i++) {
      for (int j = i + 1; j < 5; j++) {
        double dx = b[i].x - b[j].x, dy = b[i].y - b[j].y, dz = b[i].z - b[j].z;
        double d2 = dx * dx + dy * dy + dz * dz;
        double mag = 0.01 / (d2 * __builtin_sqrt(d2));
        b[i].vx -= dx * b[j].mass * mag; b[i].vy -= dy * b[j].mass * mag; b[i].vz -= dz * b[j].mass * mag;
        b[j].vx += dx * b[i].mass * mag; b[j].vy += dy * b[i].mass * mag; b[j].vz += dz * b[i].mass * mag;
      }
    }
    for (int i = 0; i < 5; i++) { b[i].x += 0.01 * b[i].vx; b[i].y += 0.01 * b[i].vy; b[i].z += 0.01 * b[i].vz; }
  }
  double e = 0;
  for (int i = 0; i < 5; i++) e += b[i].x * 1e3 + b[i].vy;
  union { float f; uint32_t u; } u = {(float)e}; /* float bits: compared with a tolerance */
  return (int32_t)u.u;
}

/* An LZ77 compressor (hash of the next 4 bytes, one candidate, greedy matches) and its
 * decompressor over generated text with repeats: byte loops, unaligned compares, branches. */
#define LZ_BYTES (256 * 1024)
static uint8_t lz_in[LZ_BYTES], lz_packed[LZ_BYTES * 2], lz_out[LZ_BYTES];
static int32_t lz_head[1 << 14];

PROGRAM(lz) {
  g_rng = 4242;
  static const char words[][8] = {"the ", "wasm ", "guest ", "kernel ", "device ", "tenant ", "quota ", "ptx "};
  uint32_t n = 0;
  while (n < LZ_BYTES - 8) {
    const char* w = words[rnd() & 7];
    while (*w != 0 && n < LZ_BYTES) lz_in[n++] = (uint8_t)*w++;
    if ((rnd() & 15) == 0) lz_in[n++] = (uint8_t)('a' + rnd() % 26);
  }
  while (n < LZ_BYTES) lz_in[n++] = '.';
  uint32_t check = 0;
  for (int pass = 0; pass < 3; pass++) {
    for (int i = 0; i < (1 << 14); i++) lz_head[i] = -1;
    uint32_t ip = 0, op = 0;
    while (ip < LZ_BYTES) {
      uint32_t len = 0, dist = 0;
      if (ip + 4 <= LZ_BYTES) {
        uint32_t key = (uint32_t)lz_in[ip] | (uint32_t)lz_in[ip + 1] << 8 | (uint32_t)lz_in[ip + 2] << 16 |
                       (uint32_t)lz_in[ip + 3] << 24;
        uint32_t h = (key * 2654435761u) >> 18;
        int32_t cand = lz_head[h];
        lz_head[h] = (int32_t)ip;
        if (cand >= 0 && ip - (uint32_t)cand < 65535) {
          while (ip + len < LZ_BYTES && len < 255 && lz_in[cand + len] == lz_in[ip + len]) len++;
          dist = ip - (uint32_t)cand;
        }
      }
      if (len >= 4) {
        lz_packed[op++] = 0xff;
        lz_packed[op++] = (uint8_t)len;
        lz_packed[op++] = (uint8_t)dist;
        lz_packed[op++] = (uint8_t)(dist >> 8);
        ip += len;
      } else {
        uint8_t c = lz_in[ip++];
        if (c == 0xff) lz_packed[op++] = 0xff, lz_packed[op++] = 0;
        else lz_packed[op++] = c;
      }
    }
    uint32_t packed = op, o = 0;
    for (uint32_t i = 0; i < packed;) {
      uint8_t c = lz_packed[i++];
      if (c != 0xff) { lz_out[o++] = c; continue; }
      uint32_t len = lz_packed[i++];
      if (len == 0) { lz_out[o++] = 0xff; continue; }
      uint32_t dist = (uint32_t)lz_packed[i] | (uint32_t)lz_packed[i + 1] << 8;
      i += 2;
      for (uint32_t k = 0; k < len; k++, o++) lz_out[o] = lz_out[o - dist];
    }
    for (uint32_t i = 0; i < LZ_BYTES; i += 61) check = check * 33 + lz_out[i];
    check ^= packed + o;
  }
  return (int32_t)check;
}

/* Dijkstra's shortest paths with a binary heap over a generated sparse graph: pointer-chasing
 * through index arrays and heap sifts. */
#define G_NODES 16384
#define G_DEGREE 6
static uint32_t g_edge_to[G_NODES * G_DEGREE], g_edge_w[G_NODES * G_DEGREE];
static uint32_t g_dist[G_NODES], g_heap_node[G_NODES * G_DEGREE + 1], g_heap_key[G_NODES * G_DEGREE + 1];

PROGRAM(graph) {
  g_rng = 777;
  for (uint32_t i = 0; i < G_NODES * G_DEGREE; i++) {
    uint32_t from = i / G_DEGREE;
    g_edge_to[i] = (i % G_DEGREE == 0) ? (from + 1) % G_NODES : rnd() % G_NODES;
    g_edge_w[i] = 1 + rnd() % 1000;
  }
  uint32_t check = 0;
  for (uint32_t source = 0; source < 3; source++) {
    for (uint32_t i = 0; i < G_NODES; i++) g_dist[i] = 0xffffffffu;
    uint32_t size = 0;
    g_dist[source] = 0;
    g_heap_node[size] = source;
    g_heap_key[size++] = 0;
    while (size > 0) {
      uint32_t node = g_heap_node[0], key = g_heap_key[0];
      size--;
      uint32_t last_node = g_heap_node[size], last_key = g_heap_key[size], i = 0;
      for (;;) { /* sift the last element down from the root */
        uint32_t c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && g_heap_key[c + 1] < g_heap_key[c]) c++;
        if (g_heap_key[c] >= last_key) break;
        g_heap_node[i] = g_heap_node[c];
        g_heap_key[i] = g_heap_key[c];
        i = c;
      }
      g_heap_node[i] = last_node;
      g_heap_key[i] = last_key;
      if (key != g_dist[node]) continue; /* stale entry */
      for (uint32_t e = node * G_DEGREE; e < node * G_DEGREE + G_DEGREE; e++) {
        uint32_t to = g_edge_to[e], d = key + g_edge_w[e];
        if (d >= g_dist[to]) continue;
        g_dist[to] = d;
        uint32_t j = size++; /* sift up */
        while (j > 0 && g_heap_key[(j - 1) / 2] > d) {
          g_heap_node[j] = g_heap_node[(j - 1) / 2];
          g_heap_key[j] = g_heap_key[(j - 1) / 2];
          j = (j - 1) / 2;
        }
        g_heap_node[j] = to;
        g_heap_key[j] = d;
      }
    }
    for (uint32_t i = 0; i < G_NODES; i++) check = check * 31 + g_dist[i];
  }
  return (int32_t)check;
}

/* Schoolbook multiplication of 768-limb numbers (32-bit limbs, 64-bit products and carries). */
#define BIG_LIMBS 768
static uint32_t big_a[BIG_LIMBS], big_b[BIG_LIMBS], big_r[2 * BIG_LIMBS];

PROGRAM(bignum) {
  g_rng = 31337;
  for (int i = 0; i < BIG_LIMBS; i++) { big_a[i] = rnd(); big_b[i] = rnd(); }
  uint32_t check = 0;
  for (int pass = 0; pass < 6; pass++) {
    for (int i = 0; i < 2 * BIG_LIMBS; i++) big_r[i] = 0;
    for (int i = 0; i < BIG_LIMBS; i++) {
      uint64_t carry = 0, ai = big_a[i];
      for (int j = 0; j < BIG_LIMBS; j++) {
        uint64_t t = ai * big_b[j] + big_r[i + j] + carry;
        big_r[i + j] = (uint32_t)t;
        carry = t >> 32;
      }
      big_r[i + BIG_LIMBS] = (uint32_t)carry;
    }
    for (int i = 0; i < 2 * BIG_LIMBS; i++) check = check * 17 + big_r[i];
    big_a[pass] ^= check; /* each pass multiplies a different number */
  }
  return (int32_t)check;
}

/* Word frequencies in generated text: FNV-1a over each word, an open-addressing table with
 * string compares, then the most frequent word's count. */
#define WC_BYTES (384 * 1024)
#define WC_SLOTS 8192
static char wc_text[WC_BYTES];
static uint32_t wc_start[WC_SLOTS], wc_len[WC_SLOTS], wc_count[WC_SLOTS];

PROGRAM(words) {
  g_rng = 2024;
  uint32_t n = 0;
  while (n < WC_BYTES - 16) {
    uint32_t stem = rnd() % 3000; /* at most 3,000 distinct words, skewed through the square */
    stem = stem * stem / 3000;
    uint32_t len = 1 + (stem & 7);
    for (uint32_t k = 0; k < len; k++) wc_text[n++] = (char)('a' + (stem >> (k * 2) & 15) + (k & 1));
    wc_text[n++] = ' ';
  }
  while (n < WC_BYTES) wc_text[n++] = ' ';
  uint32_t best = 0;
  for (int pass = 0; pass < 3; pass++) {
    for (int i = 0; i < WC_SLOTS; i++) wc_count[i] = 0;
    uint32_t i = 0;
    while (i < WC_BYTES) {
      while (i < WC_BYTES && wc_text[i] == ' ') i++;
      uint32_t s = i, h = 2166136261u;
      while (i < WC_BYTES && wc_text[i] != ' ') h = (h ^ (uint8_t)wc_text[i++]) * 16777619u;
      uint32_t len = i - s;
      if (len == 0) break;
      for (uint32_t slot = h & (WC_SLOTS - 1);; slot = (slot + 1) & (WC_SLOTS - 1)) {
        if (wc_count[slot] == 0) { wc_start[slot] = s; wc_len[slot] = len; wc_count[slot] = 1; break; }
        if (wc_len[slot] == len) {
          uint32_t k = 0;
          while (k < len && wc_text[wc_start[slot] + k] == wc_text[s + k]) k++;
          if (k == len) { wc_count[slot]++; break; }
        }
      }
    }
    for (int k = 0; k < WC_SLOTS; k++) if (wc_count[k] > best) best = wc_count[k] + (uint32_t)k;
  }
  return (int32_t)best;
}
