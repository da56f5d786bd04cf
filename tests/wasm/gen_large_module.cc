// gen_large_module FUNCTIONS OUT.c (tests and bench_engine): writes a C program for wasm32-wasi whose module is large
// in the way real ones are (sqlite3 built for wasm32-wasi is 1.4 MB): FUNCTIONS functions, each a few blocks drawn from
// the shapes compiled C is made of: a bytecode interpreter's switch (br_table), byte-hashing loops, record updates
// through pointers, floating point, direct calls and calls through a function table (call_indirect). Constants come
// from a fixed seed, so the output is the same on every run and no two functions are alike (the compiler cannot merge
// them).
//
// The program calls every function and prints one checksum: a module compiled two ways (the quick
// tier and the optimised one, engine.h) must print the same line.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Rng {
  unsigned long long s = 0x9E3779B97F4A7C15ull;
  unsigned Next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<unsigned>(s >> 11);
  }
  unsigned Below(unsigned n) { return Next() % n; }
};

const char* const kOps[] = {"+", "-", "^", "|", "&", "*"};

std::string Op(Rng& r) { return kOps[r.Below(6)]; }
std::string K(Rng& r) { return std::to_string(r.Next() % 100000u + 1) + "u"; }
std::string Shift(Rng& r) { return std::to_string(r.Below(29) + 1); }

// One case of an interpreter's switch.
std::string Case(Rng& r) {
  switch (r.Below(6)) {
    case 0: return "acc = acc " + Op(r) + " (regs[(op + " + K(r) + ") & 7] " + Op(r) + " " + K(r) + ");";
    case 1: return "regs[" + std::to_string(r.Below(8)) + "] = acc " + Op(r) + " " + K(r) + ";";
    case 2: return "if (acc > " + K(r) + ") acc -= " + K(r) + "; else acc += regs[" + std::to_string(r.Below(8)) + "];";
    case 3: return "for (unsigned j = 0; j < (op & 3u); ++j) acc = acc * " + K(r) + " + j;";
    case 4: return "acc = (acc << " + Shift(r) + ") | (acc >> (32 - " + Shift(r) + "));";
    default: return "buf[(acc + " + K(r) + ") & 255u] ^= (unsigned char)acc;";
  }
}

void Function(FILE* out, Rng& r, int i) {
  std::fprintf(out, "static unsigned f%d(unsigned x, unsigned char* buf, int depth) {\n", i);
  std::fprintf(
      out, "  (void)buf;\n  (void)depth;\n  unsigned acc = x ^ %s, regs[8] = {x, %s, %s, %s, %s, %s, %s, %s};\n",
      K(r).c_str(), K(r).c_str(), K(r).c_str(), K(r).c_str(), K(r).c_str(), K(r).c_str(), K(r).c_str(), K(r).c_str());
  int blocks = 2 + static_cast<int>(r.Below(3));
  for (int b = 0; b < blocks; ++b) {
    switch (r.Below(5)) {
      case 0: {  // an interpreter over the buffer
        int cases = 8 + static_cast<int>(r.Below(17));
        std::fprintf(out, "  for (unsigned pc = 0; pc < 64u; ++pc) {\n    unsigned op = buf[(pc * %s) & 255u];\n",
                     K(r).c_str());
        std::fprintf(out, "    switch (op %% %du) {\n", cases);
        for (int c = 0; c < cases; ++c) std::fprintf(out, "      case %d: %s break;\n", c, Case(r).c_str());
        std::fprintf(out, "    }\n  }\n");
        break;
      }
      case 1:  // a hash over the buffer
        std::fprintf(out,
                     "  for (unsigned j = 0; j < 256u; ++j) {\n    acc = (acc ^ buf[j]) * %s;\n    acc ^= acc >> %s;\n"
                     "    if (buf[j] == %uu) acc += %s;\n  }\n",
                     K(r).c_str(), Shift(r).c_str(), r.Below(256), K(r).c_str());
        break;
      case 2:  // records through pointers
        std::fprintf(out,
                     "  {\n    struct rec* p = &g_recs[(acc + %s) & 63u];\n    p->key = acc %s %s;\n"
                     "    p->count += 1;\n    p->weight = p->weight * %d.25 + (double)(acc & 1023u);\n"
                     "    if (p->next == 0) p->next = &g_recs[(p->key + %s) & 63u];\n"
                     "    else acc += p->next->key %s (unsigned)p->next->weight;\n  }\n",
                     K(r).c_str(), Op(r).c_str(), K(r).c_str(), static_cast<int>(r.Below(3)), K(r).c_str(),
                     Op(r).c_str());
        break;
      case 3:  // floating point
        std::fprintf(out,
                     "  {\n    double v = (double)(acc & 65535u) / %u.0;\n"
                     "    for (int j = 0; j < 8; ++j) v = v * %d.5 - v * v / (%d.0 + v);\n"
                     "    acc += (unsigned)(v * 1000.0) & 65535u;\n  }\n",
                     r.Below(100000) + 1, static_cast<int>(r.Below(3)), static_cast<int>(r.Below(9) + 1));
        break;
      default:  // calls: direct to an earlier function, and through the table
        if (i > 0) {
          std::fprintf(out, "  if (depth > 0) acc += f%u(acc %s %s, buf, depth - 1);\n", r.Below(i), Op(r).c_str(),
                       K(r).c_str());
          std::fprintf(out, "  if (depth > 0) acc ^= g_table[(acc + %s) %% %du](acc, buf, depth - 1);\n", K(r).c_str(),
                       i);
        } else {
          std::fprintf(out, "  acc += regs[acc & 7u];\n");
        }
        break;
    }
  }
  std::fprintf(out, "  return acc + regs[acc & 7u];\n}\n\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gen_large_module FUNCTIONS OUT.c\n");
    return 2;
  }
  int n = std::atoi(argv[1]);
  if (n < 1) {
    std::fprintf(stderr, "gen_large_module: FUNCTIONS must be at least 1\n");
    return 2;
  }
  FILE* out = std::fopen(argv[2], "w");
  if (out == nullptr) {
    std::perror(argv[2]);
    return 1;
  }
  Rng r;
  std::fprintf(out,
               "// Generated by tests/wasm/gen_large_module.cc (%d functions): do not edit.\n#include <stdio.h>\n\n"
               "struct rec { unsigned key, count; double weight; struct rec* next; };\n"
               "static struct rec g_recs[64];\n"
               "typedef unsigned (*fn_t)(unsigned, unsigned char*, int);\n"
               "static fn_t g_table[%d];\n\n",
               n, n);
  for (int i = 0; i < n; ++i) Function(out, r, i);
  std::fprintf(out, "static fn_t g_table[%d] = {\n", n);
  for (int i = 0; i < n; ++i) std::fprintf(out, "  f%d,\n", i);
  std::fprintf(out,
               "};\n\nint main(void) {\n  unsigned char buf[256];\n"
               "  for (unsigned j = 0; j < 256u; ++j) buf[j] = (unsigned char)(j * 37u + 11u);\n"
               "  unsigned sum = 0;\n"
               "  for (int i = 0; i < %d; ++i) sum = sum * 31u + g_table[i](sum, buf, 2);\n"
               "  printf(\"large module: %d functions, checksum %%08x\\n\", sum);\n  return 0;\n}\n",
               n, n);
  if (std::fclose(out) != 0) {
    std::perror(argv[2]);
    return 1;
  }
  return 0;
}
