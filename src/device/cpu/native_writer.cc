// Native code's C writer (native.h): a kernel's blocks (native_cfg.h) as C functions, one per
// block, over the interpreter's register file.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/names.h"
#include "device/cpu/exec.h"
#include "device/cpu/native.h"
#include "device/cpu/native_cfg.h"

namespace gpuwasm::device::cpu {

using ptx::Type;

namespace {

// kNativeWait, kNativeExited and kNativeApart as C literals.
const std::string kWaitC = std::to_string(kNativeWait) + "u";
const std::string kExitedC = std::to_string(kNativeExited) + "u";
const std::string kApartC = std::to_string(kNativeApart) + "u";

// Bump with any change to what the translation emits.
constexpr const char* kNativeVersion = "gpuwasm-native-10";

// What every generated source starts with: the C of NativeCtx (native.h), then helpers.
const std::string kPrelude =
    std::string("#include <stdint.h>\n#include <string.h>\n#include <math.h>\n") + kNativeCtxC + "\n" + R"(
/* The slow path of an access (another region, or a fault): out of line, so that the hot loops keep
   their values in registers. */
__attribute__((noinline, cold)) static uint8_t* gw_slow(struct gw_ctx* c, uint32_t pc, uint32_t space, uint64_t a,
                                                        uint32_t bytes, uint32_t t, int store) {
  return c->address(c, pc, space, a, bytes, t, store);
}
#define gw_likely(x) __builtin_expect(!!(x), 1)
/* Instruction P's global region (the one its last access hit) in locals, for its B-byte accesses:
   gh: host address of its base gb; an offset o fits when o < gn. Only gw_slow changes the region. */
#define gw_region(P, B) { const struct gw_region* g = &c->regions[P]; gb##P = g->base; \
  gn##P = g->size >= (B) ? g->size - (B) + 1 : 0; gh##P = g->host; }
/* A value for every thread (a uniform result other blocks read): four registers per store. */
typedef uint64_t gw_v4 __attribute__((vector_size(32), aligned(8)));
static inline void gw_fill(uint64_t* p, uint64_t v, uint32_t n) {
  const gw_v4 x = {v, v, v, v};
  uint32_t i = 0;
  for (; i + 4 <= n; i += 4) memcpy(p + i, &x, sizeof x);
  for (; i < n; ++i) p[i] = v;
}
static inline float gw_f(uint64_t v) { uint32_t u = (uint32_t)v; float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t gw_fb(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline double gw_d(uint64_t v) { double d; memcpy(&d, &v, 8); return d; }
/* min and max (float_formats.h FMin, FMax): a NaN operand yields the other, two NaNs the quiet
   NaN; -0 is below +0. */
#define GW_MINMAX(NAME, T, NAN, LESS) static inline T NAME(T a, T b) { \
  if (a != a || b != b) return a != a && b != b ? NAN : a != a ? b : a; \
  if (a == 0 && b == 0) return !!signbit(a) == LESS ? a : b; \
  return LESS ? (a < b ? a : b) : (a > b ? a : b); }
GW_MINMAX(gw_minf, float, __builtin_nanf(""), 1)
GW_MINMAX(gw_maxf, float, __builtin_nanf(""), 0)
GW_MINMAX(gw_mind, double, __builtin_nan(""), 1)
GW_MINMAX(gw_maxd, double, __builtin_nan(""), 0)
static inline uint64_t gw_db(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
/* PTX comparisons: ordered ones are false on NaN, unordered ones true (c: the Cmp value). */
static inline int gw_cmpf(int c, double a, double b) {
  int u = a != a || b != b;
  switch (c) {
)" +
    [] {
      // The case labels are the decoder's Cmp values, not numbers written twice.
      struct Case {
        Cmp cmp;
        const char* test;
      };
      static constexpr Case kCases[] = {{Cmp::kEq, "!u && a == b"}, {Cmp::kNe, "!u && a != b"},
                                        {Cmp::kLt, "!u && a < b"},  {Cmp::kLe, "!u && a <= b"},
                                        {Cmp::kGt, "!u && a > b"},  {Cmp::kGe, "!u && a >= b"},
                                        {Cmp::kEqu, "u || a == b"}, {Cmp::kNeu, "u || a != b"},
                                        {Cmp::kLtu, "u || a < b"},  {Cmp::kLeu, "u || a <= b"},
                                        {Cmp::kGtu, "u || a > b"},  {Cmp::kGeu, "u || a >= b"},
                                        {Cmp::kNum, "!u"},          {Cmp::kNan, "u"}};
      std::string cases;
      for (const Case& c : kCases) {
        cases += "    case " + std::to_string(static_cast<int>(c.cmp)) + ": return " + c.test + ";\n";
      }
      return cases;
    }() +
    R"(    default: return 0;
  }
}
)";

// Where generic addresses of shared or local memory start (exec.h), as a C literal.
std::string WindowC(uint64_t base) { return Hex(base) + "ull"; }

const char* CType(Type t) {  // the interpreter's WithInt mapping
  switch (t) {
    case Type::kS8: return "int8_t";
    case Type::kS16: return "int16_t";
    case Type::kS32: return "int32_t";
    case Type::kS64: return "int64_t";
    case Type::kU8:
    case Type::kB8: return "uint8_t";
    case Type::kU16:
    case Type::kB16: return "uint16_t";
    case Type::kU64:
    case Type::kB64: return "uint64_t";
    default: return "uint32_t";
  }
}

const char* UType(Type t) {
  switch (t) {
    case Type::kS8:
    case Type::kU8:
    case Type::kB8: return "uint8_t";
    case Type::kS16:
    case Type::kU16:
    case Type::kB16: return "uint16_t";
    case Type::kS64:
    case Type::kU64:
    case Type::kB64: return "uint64_t";
    default: return "uint32_t";
  }
}

unsigned Bits(Type t) {
  switch (t) {
    case Type::kS8:
    case Type::kU8:
    case Type::kB8: return 8;
    case Type::kS16:
    case Type::kU16:
    case Type::kB16: return 16;
    case Type::kS64:
    case Type::kU64:
    case Type::kB64: return 64;
    default: return 32;
  }
}

bool IsIntLike(Type t) { return !ptx::IsFloat(t) && t != Type::kPred && t != Type::kF16x2 && t != Type::kBF16x2; }

class Translator {
 public:
  Translator(const Program& p, const KernelEntry& k) : p_(p), k_(k) {}

  Result<NativeSource> Run() {
    GPUWASM_ASSIGN_OR_RETURN(cfg_,
                             KernelCfg::Build(p_, k_, [this](const Inst& in, uint32_t pc) { return Inline(in, pc); }));
    for (const GlobalVariable& g : p_.globals) global_slots_.insert(g.address_slot);
    // Slots some block reads before writing: their values cross block boundaries, so a block that
    // writes one stores it back if a block after it may read it (Liveness()). Every other
    // per-thread value lives in C locals within its block.
    std::vector<std::set<uint32_t>> ue(cfg_.starts.size());
    for (size_t b = 0; b < cfg_.starts.size(); ++b) {
      ue[b] = UpwardExposed(static_cast<uint32_t>(b));
      crossing_.insert(ue[b].begin(), ue[b].end());
    }
    Liveness(ue);
    preds_.assign(cfg_.starts.size(), {});
    for (size_t b = 0; b < cfg_.starts.size(); ++b) {
      for (uint32_t x : cfg_.succ[b]) {
        if (x != KernelCfg::kExit) preds_[x].push_back(static_cast<uint32_t>(b));
      }
    }
    if (!cfg_.has_calls) Dominators();
    std::string body;
    for (size_t b = 0; b < cfg_.starts.size(); ++b) {
      GPUWASM_ASSIGN_OR_RETURN(std::string f, Block(static_cast<uint32_t>(b)));
      body += f;
    }
    if (bad_operand_) return Status::Unsupported("native code: an instruction lacks an operand");
    NativeSource src;
    src.blocks = static_cast<uint32_t>(cfg_.starts.size());
    src.entry_block = cfg_.BlockOf(k_.entry_pc);
    src.starts = cfg_.starts;
    src.ctaid_registers = cfg_.has_calls;
    std::vector<uint32_t> reads, writes;
    for (uint32_t pc : cfg_.host) {  // host blocks (and C shuffles) read the register file
      cfg_.ReadsWrites(p_.code[pc], reads, writes);
      for (uint32_t r : reads) src.ctaid_registers = src.ctaid_registers || CtaidIndex(r) >= 0;
    }
    src.c = std::string("/* ") + kNativeVersion + " */\n" + kPrelude + body;
    src.c += "const uint32_t gw_block_count = " + std::to_string(src.blocks) + ";\n";
    src.c += "int (*const gw_blocks[])(struct gw_ctx*) = {";
    for (uint32_t b = 0; b < src.blocks; ++b) src.c += (b ? ", gw_b" : "gw_b") + std::to_string(b);
    src.c += "};\n";
    return src;
  }

 private:
  Status Unsupported(const Inst& in, const std::string& what) {
    return Status::Unsupported("native code: " + what + " (PTX line " + std::to_string(in.line) + ")");
  }

  // Whether the translation writes `in` as C (else it is a host block: NativeCtx::host_exec runs
  // it with the interpreter's semantics, warp by warp, for every thread waiting for it).
  bool Inline(const Inst& in, uint32_t pc) {
    if (!Translatable(in.op)) return false;
    const auto used = used_, uused = uused_;
    const bool bad = bad_operand_;
    const bool ok = Compute(in, pc, [&](uint32_t) { return std::string("x"); }).ok();
    used_ = used, uused_ = uused, bad_operand_ = bad;
    return ok;
  }

  // The instructions the translation covers as C.
  static bool Translatable(Op op) {
    switch (op) {
      case Op::kNop:
      case Op::kMov:
      case Op::kLdKParam:
      case Op::kLd:
      case Op::kSt:
      case Op::kCvta:
      case Op::kCvtaTo:
      case Op::kMulWide:
      case Op::kMadWide:
      case Op::kSetp:
      case Op::kSelp:
      case Op::kCvt:
      case Op::kAdd:
      case Op::kSub:
      case Op::kMulLo:
      case Op::kMadLo:
      case Op::kMin:
      case Op::kMax:
      case Op::kAnd:
      case Op::kOr:
      case Op::kXor:
      case Op::kNot:
      case Op::kNeg:
      case Op::kShl:
      case Op::kShr:
      case Op::kFma:
      case Op::kDiv:  // (floats only: Compute refuses the integer forms)
      case Op::kAbs:
      case Op::kSqrt:
      case Op::kRcp:
      case Op::kRsqrt:
      case Op::kSin:
      case Op::kCos:
      case Op::kEx2:
      case Op::kLg2:
      case Op::kTanh:
      case Op::kCopysign:
      case Op::kAtom:
      case Op::kBra:
      case Op::kBar:
      case Op::kWarpSync:
      case Op::kExit:
      case Op::kRet: return true;
      default: return false;
    }
  }

  // live_in_[b]: the crossing slots some path from block b's start reads before writing. Each
  // thread follows the CFG, so a block stores back (or fills) only the slots live after it: what
  // no later block reads stays in C locals. Bitsets over the crossing slots, iterated to the fixed
  // point; past kMaxLivenessWork word operations (a hostile CFG) every crossing slot counts as
  // live everywhere, as in a kernel with calls (whose ret reads the slots of every call site).
  void Liveness(const std::vector<std::set<uint32_t>>& ue) {
    const size_t nb = cfg_.starts.size();
    std::vector<uint32_t> dense(crossing_.begin(), crossing_.end());
    const size_t words = (dense.size() + 63) / 64;
    auto index = [&](uint32_t slot) { return std::lower_bound(dense.begin(), dense.end(), slot) - dense.begin(); };
    using Bits = std::vector<uint64_t>;
    std::vector<Bits> in(nb, Bits(words, 0)), gen(nb, Bits(words, 0)), keep(nb, Bits(words, ~uint64_t{0}));
    std::vector<uint32_t> reads, writes;
    for (size_t b = 0; b < nb; ++b) {
      for (uint32_t s : ue[b]) {
        const auto i = index(s);
        gen[b][i / 64] |= uint64_t{1} << (i % 64);
      }
      for (uint32_t pc = cfg_.starts[b]; pc < cfg_.BlockEnd(static_cast<uint32_t>(b)); ++pc) {
        cfg_.ReadsWrites(p_.code[pc], reads, writes);
        for (uint32_t w : writes) {
          if (!crossing_.count(w)) continue;
          const auto i = index(w);
          keep[b][i / 64] &= ~(uint64_t{1} << (i % 64));
        }
      }
    }
    bool converged = !cfg_.has_calls;
    uint64_t work = 0;
    for (bool changed = converged; changed && converged;) {
      changed = false;
      for (size_t b = nb; b-- > 0;) {
        for (size_t w = 0; w < words; ++w) {
          uint64_t out = 0;
          for (uint32_t s : cfg_.succ[b]) {
            if (s != KernelCfg::kExit) out |= in[s][w];
          }
          const uint64_t v = gen[b][w] | (out & keep[b][w]);
          changed = changed || v != in[b][w];
          in[b][w] = v;
        }
        work += words * (cfg_.succ[b].size() + 1);
      }
      converged = work <= kMaxLivenessWork;
    }
    live_in_.assign(nb, {});
    for (size_t b = 0; b < nb; ++b) {
      if (!converged) {
        live_in_[b] = crossing_;
        continue;
      }
      for (size_t i = 0; i < dense.size(); ++i) {
        if (in[b][i / 64] >> (i % 64) & 1) live_in_[b].insert(dense[i]);
      }
    }
  }
  static constexpr uint64_t kMaxLivenessWork = uint64_t{1} << 24;

  // The slots live after block b when control leaves it for `to` (every successor when empty).
  std::set<uint32_t> LiveAfter(uint32_t b, const std::vector<uint32_t>& to = {}) const {
    std::set<uint32_t> live;
    for (uint32_t s : to.empty() ? cfg_.succ[b] : to) {
      if (s != KernelCfg::kExit) live.insert(live_in_[s].begin(), live_in_[s].end());
    }
    return live;
  }

  std::set<uint32_t> UpwardExposed(uint32_t b) const {
    std::set<uint32_t> ue, written;
    std::vector<uint32_t> reads, writes;
    for (uint32_t pc = cfg_.starts[b]; pc < cfg_.BlockEnd(b); ++pc) {
      cfg_.ReadsWrites(p_.code[pc], reads, writes);
      for (uint32_t r : reads) {
        if (!written.count(r) && !(all_ && cfg_.IsUniform(r))) ue.insert(r);
      }
      for (uint32_t w : writes) written.insert(w);
    }
    return ue;
  }

  // 0, 1 or 2 for the slot of %ctaid.x, .y or .z; else -1.
  int CtaidIndex(uint32_t slot) const {
    const uint32_t x = p_.special_base + kCtaidX;
    return slot >= x && slot < x + 3 ? static_cast<int>(slot - x) : -1;
  }

  // The register-file value of `slot` for thread `t` (a C expression) in a block function: %ctaid
  // comes from NativeCtx (the executor fills the registers only for host blocks and calls).
  std::string SlotValue(uint32_t slot, const std::string& t) const {
    const std::string n = std::to_string(slot);
    if (!cfg_.has_calls && CtaidIndex(slot) >= 0) return "(uint64_t)c->ctaid[" + std::to_string(CtaidIndex(slot)) + "]";
    return "s" + n + "[" + t + "]";
  }

  bool IsConst(uint32_t slot) const {
    return slot >= p_.const_base && slot < p_.const_base + p_.consts.size() && !global_slots_.count(slot);
  }

  // A register as a C expression: a constant's value; a uniform slot's current value in this
  // block (computed once, before the thread loop); else the thread's local copy.
  std::string R(uint32_t slot) {
    if (slot >= p_.slot_count) {  // an operand the instruction lacks: refused at the end of Run()
      bad_operand_ = true;
      return "0ull";
    }
    if (IsConst(slot)) {
      char b[32];
      std::snprintf(b, sizeof b, "0x%llxull", static_cast<unsigned long long>(p_.consts[slot - p_.const_base]));
      return b;
    }
    if (all_ && cfg_.IsUniform(slot)) {
      auto it = uversion_.find(slot);
      if (it != uversion_.end()) return it->second;
      uused_.insert(slot);
      return "u" + std::to_string(slot);
    }
    used_.insert(slot);
    return "r" + std::to_string(slot);
  }

  // gw_go(B) for a successor block (token-pasted into its counter's name).
  std::string Go(uint32_t block) {
    succ_.insert(block);
    return "gw_go(" + std::to_string(block) + ")";
  }

  // The instruction's guard as a C condition ("" when it has none).
  std::string Guard(const Inst& in) {
    if (in.guard == kNoSlot) return "";
    return std::string(in.guard_negated ? "!" : "") + "(" + R(in.guard) + " & 1)";
  }

  // An instruction every thread runs in the all-mode thread loop (its own guard aside), or, in the
  // if-region, only the threads the region's branch does not skip.
  struct ThreadItem {
    uint32_t pc = 0;
    std::string guard;  // "" when unguarded
    bool in_region = false;
  };

  // How the thread loop's memory accesses are written:
  //   kChecked    each access against its instruction's last region, else the executor (faults);
  //   kCheckAhead no access: whether each would fit its region (bad |= ...), and whether every
  //               thread that runs a global access touches cl<pc> + t * bytes (cl == ch);
  //   kContiguous straight to cl<pc> + t * bytes in the region's host memory (gwr<pc>), after
  //               kCheckAhead found every access fits and is so: the compiler sees consecutive
  //               threads touch consecutive elements, and can vectorise across threads.
  enum class Access { kChecked, kCheckAhead, kContiguous };

  // The thread loop's body for `items` (counting into n, except kCheckAhead). The if-region, when
  // there is one, runs where `skip` is false and counts `skip_count` plus its guarded instructions
  // that run; `region_only`: only the region's statements.
  Result<std::string> ThreadCode(const std::vector<ThreadItem>& items, const std::string& skip, uint32_t skip_count,
                                 Access mode, bool region_only = false) {
    access_ = mode;
    std::string out, inner;
    const bool ahead = mode == Access::kCheckAhead;
    for (const ThreadItem& it : items) {
      const Inst& in = p_.code[it.pc];
      const bool access = in.op == Op::kLd || in.op == Op::kSt;
      if (ahead) {  // straight-line: an access's check takes its condition, other statements a guard
        std::string cond = it.guard;
        if (it.in_region) cond = cond.empty() ? "!gw_skip" : "!gw_skip && " + cond;
        access_guard_ = cond.empty() ? "1" : cond;
        GPUWASM_ASSIGN_OR_RETURN(std::string stmt, Compute(in, it.pc, [&](uint32_t slot) { return R(slot); }));
        (it.in_region ? inner : out) +=
            (access || cond.empty() ? "      " + stmt : "      if (" + cond + ") { " + stmt + " }") + "\n";
        continue;
      }
      GPUWASM_ASSIGN_OR_RETURN(std::string stmt, Compute(in, it.pc, [&](uint32_t slot) { return R(slot); }));
      std::string line = it.guard.empty() ? stmt : "if (" + it.guard + ") { ++n; " + stmt + " }";
      (it.in_region ? inner : out) += (it.in_region ? "        " : "      ") + line + "\n";
    }
    access_ = Access::kChecked;
    if (region_only) return inner;
    if (skip.empty()) return out;
    if (ahead) return out + "      const int gw_skip = " + skip + ";\n" + inner;
    return out + "      if (" + skip + ") { ++n; } else {\n        n += " + std::to_string(skip_count) + ";\n" + inner +
           "      }\n";
  }

  // One block function, two bodies. With c->all every live thread waits for this block (none at
  // a barrier): the block runs once for all of them, so instructions whose sources are uniform
  // run once (reading thread c->first, a live one), their results that other blocks read are
  // written to every thread, and a branch alike for all (or a barrier, or an exit) sets c->go
  // instead of next[]: the executor keeps the CTA together. Otherwise each thread waiting for
  // the block runs every instruction itself (the interpreter's semantics: a block may run more
  // than once while threads arrive at different times).
  Result<std::string> Block(uint32_t b) {
    succ_.clear();
    if (cfg_.host.count(cfg_.starts[b])) {  // the executor runs it and moves its threads on
      const Inst& in = p_.code[cfg_.starts[b]];
      const uint32_t to =
          in.op == Op::kCall ? cfg_.BlockOf(p_.calls[in.target].callee_entry) : cfg_.BlockOf(cfg_.starts[b] + 1);
      const std::string B = std::to_string(b), fall = std::to_string(to);
      const std::string host =
          "return c->host_exec(c, " + std::to_string(cfg_.starts[b]) + "u, " + B + "u, " + fall + "u);";
      if (in.op == Op::kShfl && in.guard == kNoSlot && HasSlots(in, 3, (in.flags & kDualDst) ? 2 : 1)) {
        return Shuffle(in, B, fall, host);
      }
      return "static int gw_b" + B + "(struct gw_ctx* c) { " + host + " }\n";
    }
    std::string all_body, thread_body;
    {
      all_ = true;
      GPUWASM_ASSIGN_OR_RETURN(all_body, Body(b));
      all_ = false;
      GPUWASM_ASSIGN_OR_RETURN(thread_body, Body(b));
    }
    const std::string B = std::to_string(b);
    std::string f = helpers_ + "static int gw_b" + B + "(struct gw_ctx* c) {\n";
    helpers_.clear();
    f += "  uint64_t* const R = c->regs; const uint64_t S = c->stride;\n";
    f += "  uint32_t* const next = c->next; uint32_t* const count = c->count;\n";
    f += "  uint8_t* const sh = c->shared; const uint64_t shsz = c->shared_size;\n";
    f += "  (void)sh; (void)shsz; (void)R; (void)S;\n";
    for (uint32_t s : ptrs_) {
      f += "  uint64_t* restrict s" + std::to_string(s) + " = R + (uint64_t)" + std::to_string(s) + " * S;\n";
    }
    f += "  uint64_t n = 0; uint32_t waiting = 0, exited = 0; const uint32_t T = c->threads;\n";
    std::string flush;
    for (uint32_t x : succ_) {
      f += "  uint32_t k" + std::to_string(x) + " = 0;\n";
      flush += " count[" + std::to_string(x) + "] += k" + std::to_string(x) + ";";
    }
    const std::string finish = " c->instructions += n; c->waiting += waiting; c->exited += exited;" + flush;
    f += "#define gw_go(B) { next[t] = (B); ++k##B; }\n";
    f += "#define gw_fault {" + finish + " return 1; }\n";
    f += "  c->go = " + kApartC + ";\n";
    f += "  if (c->all) {\n" + all_body + "  } else {\n" + thread_body + "  }\n";
    f += "#undef gw_go\n#undef gw_fault\n";
    f += " " + finish + "\n  return 0;\n}\n";
    ptrs_.clear();
    return f;
  }

  Result<std::string> Body(uint32_t b) {
    used_.clear();
    uused_.clear();
    uversion_.clear();
    hoisted_.clear();
    stores_.clear();
    stored_.clear();
    live_after_ = LiveAfter(b);
    cur_block_ = b;
    affine_work_ = 0;
    const uint32_t first = cfg_.starts[b], end = cfg_.BlockEnd(b);
    std::string pre;                // once per block run (all mode)
    std::vector<ThreadItem> items;  // per thread: the instructions each thread runs (ThreadCode())
    std::string skip_guard;         // the if-region's branch condition (threads where it holds skip it)
    uint32_t skip_count = 0, skip_slot = kNoSlot;
    uint32_t counted = 0;    // unguarded instructions: every thread runs them
    bool any_extra = false;  // uniform guarded instructions: `extra` counts those that ran
    uint32_t temp = 0;
    bool per_thread_code = false;
    std::optional<RangeCode> range;     // an if-region whose threads are a range of indices
    std::string term_all, term_thread;  // the terminator: all together; per thread
    for (uint32_t pc = first; pc < end; ++pc) {
      const Inst& in = p_.code[pc];
      const bool guard_uniform = all_ && in.guard != kNoSlot && cfg_.IsUniform(in.guard);
      std::string guard;
      if (in.guard != kNoSlot) guard = std::string(in.guard_negated ? "!" : "") + "(" + R(in.guard) + " & 1)";
      if (IsTerminator(in.op)) {
        const uint32_t fall = pc + 1 < p_.code.size() ? cfg_.BlockOf(pc + 1) : 0;
        std::string taken_all, taken_thread;
        if (in.op == Op::kBra) {
          taken_all = "c->go = " + std::to_string(cfg_.BlockOf(in.target)) + "u;";
          taken_thread = Go(cfg_.BlockOf(in.target));
        } else if (in.op == Op::kBar) {
          taken_all = "c->go = " + std::to_string(fall) + "u;";  // everyone arrives at once: released
          taken_thread = "{ next[t] = " + std::to_string(fall) + "u | " + kWaitC + "; ++waiting; }";
        } else if (in.op == Op::kWarpSync) {  // the next block runs once every thread is through
          taken_all = "c->go = " + std::to_string(fall) + "u;";
          taken_thread = Go(fall) + ";";
        } else {
          taken_all = "c->go = " + kExitedC + ";";
          taken_thread = "{ next[t] = " + kExitedC + "; ++exited; }";
        }
        if (in.guard == kNoSlot) {
          ++counted;
          if (all_) term_all = taken_all;
          term_thread = taken_thread;
        } else if (guard_uniform) {
          pre += "    const int go = " + guard + "; extra += go;\n";
          any_extra = true;
          term_all = "if (go) { " + taken_all + " } else c->go = " + std::to_string(fall) + "u;";
        } else if (uint32_t join = 0; all_ && IfRegion(b, in, &join)) {
          // An if some threads skip: the others run the block it skips right here, and all
          // continue together at the join.
          const uint32_t f = cfg_.BlockOf(pc + 1), fend = cfg_.BlockEnd(f);
          uint32_t fcount = 0;
          for (uint32_t q = cfg_.starts[f]; q < fend; ++q) {
            const Inst& x = p_.code[q];
            if (x.op == Op::kBra) {  // the unguarded branch to the join
              ++fcount;
              break;
            }
            if (x.guard == kNoSlot) ++fcount;
            items.push_back({q, Guard(x), /*in_region=*/true});
            region_.push_back(q);
          }
          live_after_ = LiveAfter(b, {join});  // the region's block does not run apart
          per_thread_code = true;
          skip_guard = guard;
          skip_count = fcount;
          skip_slot = in.guard;
          GPUWASM_ASSIGN_OR_RETURN(std::string inner, ThreadCode(items, skip_guard, skip_count, Access::kChecked,
                                                                 /*region_only=*/true));
          term_all = "c->go = " + std::to_string(join) + "u;";
          GPUWASM_ASSIGN_OR_RETURN(range, RangeOf(in, items, skip_guard, skip_count));
          if (range) range->inner = inner;
        } else {
          term_thread = "if (" + guard + ") { ++n; " + taken_thread + " } else " + Go(fall) + ";";
        }
        break;
      }
      std::vector<uint32_t> reads, writes;
      cfg_.ReadsWrites(in, reads, writes);
      bool uniform = all_ && in.op != Op::kSt && in.op != Op::kLd && in.op != Op::kAtom && !writes.empty();
      for (uint32_t w : writes) uniform = uniform && cfg_.IsUniform(w);
      if (uniform) {  // computed once, into new versions of its destinations
        GPUWASM_ASSIGN_OR_RETURN(std::string stmt, Statement(in, pc, temp));
        pre += "    " + stmt + "\n";
        if (in.guard == kNoSlot) {
          ++counted;
        } else {
          pre += "    extra += " + guard + ";\n";
          any_extra = true;
        }
        continue;
      }
      per_thread_code = true;
      if (in.guard == kNoSlot) ++counted;
      items.push_back({pc, guard, /*in_region=*/false});
    }
    GPUWASM_ASSIGN_OR_RETURN(std::string code, ThreadCode(items, skip_guard, skip_count, Access::kChecked));
    if (term_thread.empty() && term_all.empty()) {  // falls into the next block
      term_all = "c->go = " + std::to_string(cfg_.BlockOf(end)) + "u;";
      term_thread = Go(cfg_.BlockOf(end)) + ";";
    }
    if (!all_) term_all.clear();
    // Per-thread locals: loaded where the block reads a slot before writing it; stored where a
    // written slot's value crosses blocks. Uniform results crossing blocks go to every thread.
    std::set<uint32_t> ue = UpwardExposed(b);
    std::set<uint32_t> written;
    std::vector<uint32_t> reads, writes;
    for (uint32_t q = first; q < end; ++q) {
      cfg_.ReadsWrites(p_.code[q], reads, writes);
      for (uint32_t w : writes) written.insert(w);
    }
    for (uint32_t q : region_) {                    // run by some threads only: what they write keeps its old value
      cfg_.ReadsWrites(p_.code[q], reads, writes);  // in the others, so it is loaded like a read
      for (uint32_t r : reads) {
        if (!written.count(r) && !(all_ && cfg_.IsUniform(r))) ue.insert(r);
      }
      for (uint32_t w : writes) {
        if (!(all_ && cfg_.IsUniform(w)) && live_after_.count(w) && !written.count(w)) ue.insert(w);
        written.insert(w);
      }
    }
    region_.clear();
    std::string decl, store, fill, load;
    for (uint32_t s : used_) {
      const std::string n = std::to_string(s);
      ptrs_.insert(s);
      decl += ue.count(s) ? "      uint64_t r" + n + " = " + SlotValue(s, "t") + ";\n" : "      uint64_t r" + n + ";\n";
      if (written.count(s) && live_after_.count(s)) {
        store += "      s" + n + "[t] = r" + n + ";\n";
        stored_.insert(s);
      }
    }
    for (uint32_t s : uused_) {
      ptrs_.insert(s);
      load += "    const uint64_t u" + std::to_string(s) + " = " + SlotValue(s, "c->first") + ";\n";
    }
    for (const auto& [slot, name] : uversion_) {
      if (!live_after_.count(slot)) continue;
      ptrs_.insert(slot);
      fill += "    gw_fill(s" + std::to_string(slot) + ", " + name + ", T);\n";
    }
    const std::string per = std::to_string(counted) + (any_extra ? " + extra" : "");
    std::string out;
    out += "    uint64_t extra = 0; (void)extra;\n";
    for (const auto& [pc, bytes] : hoisted_) {
      const std::string P = std::to_string(pc);
      out += "    uint64_t gb" + P + ", gn" + P + "; uint8_t* gh" + P + "; gw_region(" + P + ", " +
             std::to_string(bytes) + ")\n";
    }
    if (all_) {
      out += load + pre;
      const bool together = !term_all.empty();
      if (range) out += RangeLoops(*range, per, decl, store, ue);
      if (per_thread_code || !together) {
        out += "    {\n";
        out += "    count[" + std::to_string(b) + "] = 0;\n";
        if (together && CanCheckAhead(items, skip_slot)) {
          GPUWASM_ASSIGN_OR_RETURN(std::string ahead, CheckedAhead(b, items, skip_guard, skip_count, per, ue));
          out += ahead;
        }
        out += "    for (uint32_t t = 0; t < T; ++t) {\n";
        out += "      if (next[t] == " + kExitedC + ") continue;\n";
        out += "      n += " + per + ";\n";
        out += decl + code + store;
        if (!together) out += "      " + term_thread + "\n";
        out += "    }\n    }\n";
      } else {
        out += "    n += (uint64_t)(" + per + ") * c->live;\n";
      }
      out += fill;
      if (together) out += "    " + term_all + "\n";
    } else {
      out += "    count[" + std::to_string(b) + "] = 0;\n";
      out += "    for (uint32_t t = 0; t < T; ++t) {\n";
      out += "      if (next[t] != " + std::to_string(b) + "u) continue;\n";
      out += "      n += " + per + ";\n";
      out += decl + code + store;
      out += "      " + term_thread + "\n";
      out += "    }\n";
    }
    return out;
  }

  // Whether the all-mode thread loop over `items` can check its accesses ahead (Access): every
  // access is global or shared (not volatile), and no address, no access's guard and no
  // if-region branch depends on a value loaded in the loop (the check-ahead pass loads nothing).
  bool CanCheckAhead(const std::vector<ThreadItem>& items, uint32_t skip_slot) const {
    std::set<uint32_t> loaded;  // slots holding (or depending on) a value loaded in the loop
    auto from_load = [&](uint32_t slot) { return slot != kNoSlot && loaded.count(slot) != 0; };
    std::vector<uint32_t> reads, writes;
    bool any_access = false;
    for (const ThreadItem& it : items) {
      const Inst& in = p_.code[it.pc];
      if (it.in_region && from_load(skip_slot)) return false;
      if (in.op == Op::kLdKParam || in.op == Op::kAtom) return false;  // (an atomic changes memory in both passes)
      cfg_.ReadsWrites(in, reads, writes);
      bool depends = from_load(in.guard);
      for (uint32_t r : reads) depends = depends || from_load(r);
      if (in.op == Op::kLd || in.op == Op::kSt) {
        if ((in.mem != Mem::kGlobal && in.mem != Mem::kShared) || (in.flags & kVolatile)) return false;
        if (from_load(in.s[0]) || from_load(in.guard)) return false;
        any_access = true;
        depends = depends || in.op == Op::kLd;
      }
      for (uint32_t w : writes) {
        if (depends) {
          loaded.insert(w);
        } else if (in.guard == kNoSlot) {
          loaded.erase(w);
        }
      }
    }
    return any_access && used_.size() <= 48;
  }

  // The all-mode thread loop's fast path, when every thread is live and this CTA executor did not
  // find the block's accesses other than contiguous before (c->ahead_off[b]): a first pass
  // computes each access's address (kCheckAhead; no loads, no stores, nothing counted); when all
  // fit their regions and are contiguous, a second pass runs the loop with unchecked contiguous
  // accesses, in a function whose register-file slots are restrict parameters, so that the C
  // compiler vectorises it (checking the regions' overlaps itself). Otherwise the checked loop that
  // follows runs as before (a fault happens there). Sets gw_done when the fast path ran.
  Result<std::string> CheckedAhead(uint32_t b, const std::vector<ThreadItem>& items, const std::string& skip,
                                   uint32_t skip_count, const std::string& per, const std::set<uint32_t>& ue) {
    GPUWASM_ASSIGN_OR_RETURN(std::string check, ThreadCode(items, skip, skip_count, Access::kCheckAhead));
    GPUWASM_ASSIGN_OR_RETURN(std::string run, ThreadCode(items, skip, skip_count, Access::kContiguous));
    const std::string B = std::to_string(b);
    std::string o =
        "    int gw_done = 0;\n    if (c->live == T && !c->ahead_off[" + B + "]) {\n      uint64_t bad = 0;\n";
    for (const auto& [pc, bytes] : hoisted_) {
      o += "      uint64_t cl" + std::to_string(pc) + " = ~0ull, ch" + std::to_string(pc) + " = 0;\n";
    }
    const std::string decl = ZeroedLocals(ue);
    o += "      for (uint32_t t = 0; t < T; ++t) {\n" + decl + check + "      }\n";
    std::string params = "uint32_t T, uint64_t extra, uint8_t* sh", args = "T, extra, sh";
    for (const std::string& name : UniformNames(run + per)) {
      params += ", uint64_t " + name;
      args += ", " + name;
    }
    std::string contiguous = "1";
    for (const auto& [pc, bytes] : hoisted_) {
      const std::string P = std::to_string(pc);
      params += ", uint8_t* gwr" + P + ", uint64_t gb" + P + ", uint64_t cl" + P;
      args += ", gh" + P + ", gb" + P + ", cl" + P;
      contiguous += " && (cl" + P + " == ch" + P + " || (cl" + P + " == ~0ull && ch" + P + " == 0))";  // or unused
    }
    std::string store;
    for (uint32_t slot : used_) {
      const std::string n = std::to_string(slot);
      const bool out = stored_.count(slot) != 0;
      if (!ue.count(slot) && !out) continue;
      params += std::string(", ") + (out ? "" : "const ") + "uint64_t* restrict s" + n;
      args += ", s" + n;
      if (out) store += "    s" + n + "[t] = r" + n + ";\n";
    }
    // noinline: inlined into the block's function, restrict no longer reaches the vectoriser.
    helpers_ +=
        "__attribute__((noinline)) static uint64_t gw_run" + B + "(" + params +
        ") {\n  (void)sh; (void)extra;\n  uint64_t nv = 0;\n  for (uint32_t t = 0; t < T; ++t) {\n    uint64_t n = " +
        per + ";\n" + decl + run + store + "    nv += n;\n  }\n  return nv;\n}\n";
    o += "      if (!(" + contiguous + ")) {\n        c->ahead_off[" + B +
         "] = 1;\n      } else if (!bad) {\n        n += gw_run" + B + "(" + args +
         ");\n        gw_done = 1;\n      }\n    }\n";
    o += "    if (!gw_done)\n";
    return o;
  }

  // The thread loop's locals for a loop the C compiler should vectorise: each starts as the
  // thread's register (slots in `ue`) or at 0, so that a value a guard skipped is not carried over
  // from the previous thread (the compiler would see a dependence between iterations).
  std::string ZeroedLocals(const std::set<uint32_t>& ue) const {
    std::string decl;
    for (uint32_t slot : used_) {
      const std::string n = std::to_string(slot);
      decl += "      uint64_t r" + n + " = " + (ue.count(slot) ? SlotValue(slot, "t") : std::string("0")) + ";\n";
    }
    return decl;
  }

  // The names of uniform values (u<slot>, v<n>) that C code reads.
  static std::set<std::string> UniformNames(const std::string& code) {
    std::set<std::string> names;
    for (size_t i = 0; i < code.size();) {
      if (!std::isalpha(static_cast<unsigned char>(code[i])) && code[i] != '_') {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < code.size() && (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_')) ++j;
      const std::string id = code.substr(i, j - i);
      if (id.size() > 1 && (id[0] == 'u' || id[0] == 'v') &&
          std::all_of(id.begin() + 1, id.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        names.insert(id);
      }
      i = j;
    }
    return names;
  }

  // Values that are affine in the thread index, in the all-mode body of a one-dimensional block
  // (thread t has %tid.x = t): `base` is a C expression of uniform values and constants, k a
  // constant. wide: the 64-bit register is base + k * t modulo 2^64. low32: its low 32 bits are
  // base + k * t as an integer, base < 2^32 and no wrap-around for t < T wherever the C
  // conditions AffinePlan collects hold.
  struct Affine {
    std::string base;
    uint64_t k = 0;
    bool wide = false, low32 = false;
  };
  static constexpr uint64_t kMaxAffineStride = uint64_t{1} << 20;
  // Bounds on the analysis of one block (hostile PTX): the C text of a value, the definitions in
  // other blocks followed (each with its operands, 12 deep at most), and the conditions collected.
  static constexpr size_t kMaxAffineText = 2048, kMaxAffineWork = 512, kMaxAffineConds = 64;

  // What the evaluation of a block's per-thread instructions found (AffineWalk()).
  struct AffineState {
    std::map<uint32_t, std::optional<Affine>> slots;  // written in the block: the value, or unknown
    std::vector<std::string> conds;                   // C conditions the values rest on
    // Evaluating a definition in another block (DefinedValue()): operands are read where it is
    // (block, before pc), and only values fixed for the CTA may be leaves.
    bool at_def = false;
    uint32_t block = 0, pc = 0;
    int depth = 0;
  };

  std::optional<Affine> AffineOf(AffineState& st, uint32_t slot) {
    if (slot >= p_.slot_count) return std::nullopt;
    if (auto it = st.slots.find(slot); it != st.slots.end()) return it->second;
    if (slot == p_.special_base + kTidX) return Affine{"0ull", 1, true, true};
    if (IsConst(slot)) return Affine{"(" + R(slot) + ")", 0, true, false};
    const bool special = slot >= p_.special_base && slot < p_.special_base + kSpecialCount;
    // A uniform value as it is now (in the block being written); at a definition elsewhere only a
    // special register of the CTA is (nothing writes those).
    if ((!st.at_def || special) && cfg_.IsUniform(slot)) return Affine{"(" + R(slot) + ")", 0, true, false};
    if (st.at_def) return DefinedValue(st, slot, st.block, st.pc);
    return DefinedValue(st, slot, cur_block_, cfg_.starts[cur_block_]);
  }

  // The value `slot` holds before `pc` in `block`, when it is the one definition that reaches
  // there (the nearest before pc in the block, else the only one reaching the block's start from
  // a block that strictly dominates it), computed from constants, the CTA's special registers and
  // values defined alike: then it is the same at every execution of the definition, and defined.
  std::optional<Affine> DefinedValue(AffineState& st, uint32_t slot, uint32_t block, uint32_t pc) {
    if (st.depth >= 12 || idom_.empty() || ++affine_work_ > kMaxAffineWork) return std::nullopt;
    std::vector<uint32_t> reads, writes;
    const Reaching& r = ReachingOf(slot);
    std::optional<uint32_t> def;
    auto before = std::lower_bound(r.defs.begin(), r.defs.end(), pc);  // the nearest before pc in the block
    if (before != r.defs.begin() && *(before - 1) >= cfg_.starts[block]) def = *(before - 1);
    if (!def) {
      const std::vector<uint32_t>& at = r.at[block];
      if (at.size() != 1 || !StrictlyDominates(Containing(at[0]), block)) return std::nullopt;
      def = at[0];
    }
    const Inst& in = p_.code[*def];
    cfg_.ReadsWrites(in, reads, writes);
    if (in.guard != kNoSlot || writes.size() != 1) return std::nullopt;
    AffineState sub;
    sub.at_def = true;
    sub.block = Containing(*def);
    sub.pc = *def;
    sub.depth = st.depth + 1;
    std::optional<Affine> v = AffineResult(sub, in);
    if (v && (v->base.size() > kMaxAffineText || v->k > kMaxAffineStride)) v.reset();
    if (v) st.conds.insert(st.conds.end(), sub.conds.begin(), sub.conds.end());
    return v;
  }

  // A slot's definitions (ascending pcs) and, per block, those that reach its start (past 64
  // definitions: two placeholders, never one reaching definition).
  struct Reaching {
    std::vector<uint32_t> defs;
    std::vector<std::vector<uint32_t>> at;
  };
  const Reaching& ReachingOf(uint32_t slot) {
    auto it = reaching_.find(slot);
    if (it != reaching_.end()) return it->second;
    const size_t nb = cfg_.starts.size();
    if (defs_of_.empty()) {  // every slot's definitions, once
      defs_of_.resize(p_.slot_count);
      std::vector<uint32_t> reads, writes;
      for (uint32_t q : cfg_.seen) {
        cfg_.ReadsWrites(p_.code[q], reads, writes);
        for (uint32_t w : writes) {
          if (w < defs_of_.size() && (defs_of_[w].empty() || defs_of_[w].back() != q)) defs_of_[w].push_back(q);
        }
      }
    }
    std::vector<uint32_t> defs = slot < defs_of_.size() ? defs_of_[slot] : std::vector<uint32_t>{};
    std::vector<std::vector<uint32_t>> result(nb);
    // (each analysis costs a few passes over the CFG: at most kMaxReachingSlots per kernel)
    if (defs.size() <= 64 && reaching_.size() < kMaxReachingSlots) {
      std::vector<uint64_t> gen(nb, 0), kill(nb, 0), in(nb, 0), out(nb, 0);
      for (size_t i = 0; i < defs.size(); ++i) {
        const uint32_t b = Containing(defs[i]);
        if (p_.code[defs[i]].guard == kNoSlot) kill[b] = ~uint64_t{0}, gen[b] = 0;  // (in order: the last wins)
        gen[b] |= uint64_t{1} << i;
      }
      for (bool changed = true; changed;) {
        changed = false;
        for (size_t b = 0; b < nb; ++b) {
          uint64_t v = 0;
          for (uint32_t x : preds_[b]) v |= out[x];
          const uint64_t o = gen[b] | (v & ~kill[b]);
          changed = changed || v != in[b] || o != out[b];
          in[b] = v, out[b] = o;
        }
      }
      for (size_t b = 0; b < nb; ++b) {
        for (size_t i = 0; i < defs.size(); ++i) {
          if (in[b] >> i & 1) result[b].push_back(defs[i]);
        }
      }
    } else {
      for (auto& r : result) r = {0, 0};
      defs.clear();
    }
    return reaching_.emplace(slot, Reaching{std::move(defs), std::move(result)}).first->second;
  }

  // The block holding `pc` (KernelCfg::BlockOf is for the pc a block starts at).
  uint32_t Containing(uint32_t pc) const {
    return static_cast<uint32_t>(std::upper_bound(cfg_.starts.begin(), cfg_.starts.end(), pc) - cfg_.starts.begin()) -
           1;
  }

  bool StrictlyDominates(uint32_t a, uint32_t b) const {
    if (a == b) return false;
    for (uint32_t x = b; x != idom_[x];) {
      x = idom_[x];
      if (x == kNoDominator) return false;
      if (x == a) return true;
    }
    return false;
  }

  // Immediate dominators of the blocks reachable from the kernel's entry (uniformity.h); the
  // entry is its own, unreachable blocks kNoDominator. Unbounded work: the CFG's size is.
  void Dominators() {
    const size_t nb = cfg_.starts.size();
    std::vector<std::vector<uint32_t>> next(nb);
    for (size_t b = 0; b < nb; ++b) {
      for (uint32_t x : cfg_.succ[b]) {
        if (x != KernelCfg::kExit) next[b].push_back(x);
      }
    }
    idom_ = ImmediateDominators(cfg_.BlockOf(k_.entry_pc), next, preds_, [](uint64_t) { return true; });
  }

  // The low 32 bits of `a` as an exact affine value (a wide one is reduced, with its condition).
  std::optional<Affine> Low32(AffineState& st, const std::optional<Affine>& a) {
    if (!a) return std::nullopt;
    if (a->low32) return a;
    if (!a->wide) return std::nullopt;
    return Exact32(st, "(uint32_t)(" + a->base + ")", a->k);
  }

  // base + k * t in 32 bits: exact where base + k * (T - 1) < 2^32 (a condition unless k is 0).
  std::optional<Affine> Exact32(AffineState& st, const std::string& base32, uint64_t k) {
    if (k > kMaxAffineStride) return std::nullopt;
    const std::string b = "(uint64_t)" + base32;
    if (k != 0) st.conds.push_back(b + " + " + std::to_string(k) + "ull * (T - 1) <= 0xffffffffull");
    return Affine{b, k, false, true};
  }

  // The signed 32-bit view of a low32 value equals its unsigned one for every t < T.
  void NonNegative32(AffineState& st, const Affine& a) {
    st.conds.push_back(a.base + " + " + std::to_string(a.k) + "ull * (T - 1) <= 0x7fffffffull");
  }

  // Evaluates one per-thread instruction of the block (in order), recording what it writes.
  void AffineStep(AffineState& st, const Inst& in) {
    std::vector<uint32_t> reads, writes;
    cfg_.ReadsWrites(in, reads, writes);
    std::optional<Affine> r;
    if (in.guard == kNoSlot && writes.size() == 1) r = AffineResult(st, in);
    // (x = y + y, repeated, doubles the text; a stride past the bound could wrap around)
    if (r && (r->base.size() > kMaxAffineText || r->k > kMaxAffineStride)) r.reset();
    for (uint32_t w : writes) st.slots[w] = std::nullopt;
    if (r && writes.size() == 1) st.slots[writes[0]] = r;
  }

  std::optional<Affine> AffineResult(AffineState& st, const Inst& in) {
    const bool int_type = IsIntLike(in.t);
    const bool b64 = int_type && Bits(in.t) == 64, b32 = int_type && Bits(in.t) == 32;
    auto konst = [&](uint32_t slot) -> std::optional<uint64_t> {
      if (!IsConst(slot)) return std::nullopt;
      return p_.consts[slot - p_.const_base];
    };
    auto a = [&](int i) { return AffineOf(st, in.s[i]); };
    switch (in.op) {
      case Op::kMov: return a(0);
      case Op::kCvta:
      case Op::kCvtaTo:
        if (in.mem == Mem::kShared || in.mem == Mem::kLocal) return std::nullopt;
        return a(0);
      case Op::kAdd:
      case Op::kSub: {
        auto x = a(0), y = a(1);
        if (!x || !y || (in.op == Op::kSub && y->k != 0)) return std::nullopt;
        const char* op = in.op == Op::kAdd ? " + " : " - ";
        const uint64_t k = x->k + y->k;
        if (b64 && x->wide && y->wide) return Affine{"(" + x->base + op + y->base + ")", k, true, false};
        if (!b32) return std::nullopt;
        x = Low32(st, x), y = Low32(st, y);
        if (!x || !y) return std::nullopt;
        return Exact32(st, "(uint32_t)(" + x->base + op + y->base + ")", k);
      }
      case Op::kMulLo:
      case Op::kMadLo: {
        auto x = a(0), y = a(1);
        std::optional<Affine> z = in.op == Op::kMadLo ? a(2) : Affine{"0ull", 0, true, true};
        if (!x || !y || !z || (x->k != 0 && y->k != 0)) return std::nullopt;
        uint64_t k = z->k;
        if (x->k != 0 || y->k != 0) {  // the other factor must be a constant
          const bool xv = x->k != 0;
          auto c = konst(in.s[xv ? 1 : 0]);
          if (!c) return std::nullopt;
          const uint64_t m = b32 ? (*c & 0xffffffffull) : *c;
          if (m > kMaxAffineStride) return std::nullopt;
          k += m * (xv ? x->k : y->k);
        }
        if (k > kMaxAffineStride) return std::nullopt;
        if (b64 && x->wide && y->wide && z->wide) {
          return Affine{"(" + x->base + " * " + y->base + " + " + z->base + ")", k, true, false};
        }
        if (!b32) return std::nullopt;
        x = Low32(st, x), y = Low32(st, y), z = Low32(st, z);
        if (!x || !y || !z) return std::nullopt;
        return Exact32(st, "(uint32_t)(" + x->base + " * " + y->base + " + " + z->base + ")", k);
      }
      case Op::kMulWide: {  // a 32-bit value varying with t, times a constant: exact in 64 bits
        if (!IsIntLike(in.t2) || Bits(in.t2) != 32) return std::nullopt;
        auto x = Low32(st, a(0));
        auto c = konst(in.s[1]);
        if (!x || !c || (*c & 0xffffffffull) > kMaxAffineStride) return std::nullopt;
        if (ptx::IsSigned(in.t2)) NonNegative32(st, *x);
        const uint64_t m = *c & 0xffffffffull;
        return Affine{"(" + x->base + " * " + std::to_string(m) + "ull)", x->k * m, true, false};
      }
      case Op::kShl: {
        auto x = a(0);
        auto c = konst(in.s[1]);
        if (!x || !c || *c >= 20) return std::nullopt;
        const std::string sh = " << " + std::to_string(*c);
        if (b64 && x->wide) return Affine{"(" + x->base + sh + ")", x->k << *c, true, false};
        if (!b32 || !(x = Low32(st, x))) return std::nullopt;
        return Exact32(st, "(uint32_t)(" + x->base + sh + ")", x->k << *c);
      }
      case Op::kCvt: {
        if (!int_type || !IsIntLike(in.t2) || (in.flags & kSat)) return std::nullopt;
        if (Bits(in.t2) == 32 && b64) {  // widening an exact 32-bit value
          auto x = Low32(st, a(0));
          if (!x) return std::nullopt;
          if (ptx::IsSigned(in.t2)) NonNegative32(st, *x);
          return Affine{x->base, x->k, true, false};
        }
        if (b32 && Bits(in.t2) >= 32) return Low32(st, a(0));
        return std::nullopt;
      }
      default: return std::nullopt;
    }
  }

  // The all-mode if-region of a one-dimensional block, when its branch compares a value
  // base + t (t: the thread index) with a uniform bound: the threads that run the region are then
  // the indices [lo, hi). `lohi`: C setting lo and hi, valid where `conds` holds. When every
  // access in the region is global or shared with an address affine in t (a global one with a
  // stride of its size), `fast` checks the accesses of threads lo and hi - 1 in C (`fast_check`,
  // after `fast_setup`): between them every access falls in the same region, so the loop may
  // run with contiguous, unchecked accesses (Access::kContiguous).
  struct RangePlan {
    std::string conds, lohi, fast_setup, fast_check;
    bool fast = false;
  };

  // An index-range if-region's plan and its threads' code: before the region (pure arithmetic), in
  // it with checked accesses, and in it unchecked (when the plan is fast).
  struct RangeCode {
    RangePlan plan;
    std::string before, inner, fast;
    uint32_t count = 0;  // the region's unguarded instructions, its branch to the join included
  };

  // The range plan of the if-region ending at `bra` (its threads' items in `items`), if any.
  Result<std::optional<RangeCode>> RangeOf(const Inst& bra, const std::vector<ThreadItem>& items,
                                           const std::string& skip, uint32_t skip_count) {
    std::vector<ThreadItem> before, region;
    for (const ThreadItem& it : items) (it.in_region ? region : before).push_back(it);
    std::optional<RangePlan> plan = AffineRange(bra, before, region);
    if (!plan) return std::optional<RangeCode>();
    RangeCode r;
    r.plan = *plan;
    r.count = skip_count;
    GPUWASM_ASSIGN_OR_RETURN(r.before, ThreadCode(before, "", 0, Access::kChecked));
    if (plan->fast) {
      GPUWASM_ASSIGN_OR_RETURN(r.fast, ThreadCode(items, skip, skip_count, Access::kContiguous, /*region_only=*/true));
    }
    return std::optional<RangeCode>(std::move(r));
  }

  // The all-mode loops of an index-range if-region: the threads that run it are the indices
  // [lo, hi); the others only compute values nothing reads after the block. When the accesses of
  // the first and last of them fit, so do all (RangePlan): the loop runs without checks.
  std::string RangeLoops(const RangeCode& r, const std::string& per, const std::string& decl, const std::string& store,
                         const std::set<uint32_t>& ue) const {
    // Both conditions are marked likely: as chains of && (each branch guessed taken half the time)
    // they made gcc predict the loops cold, optimise them for size and leave them unvectorised.
    std::string out = "    if (gw_likely(c->flat && c->live == T" + r.plan.conds + ")) {\n" + r.plan.lohi;
    out += "      n += (uint64_t)(" + per + ") * T + (T - (hi - lo)) + (uint64_t)" + std::to_string(r.count) +
           " * (hi - lo);\n";
    if (r.plan.fast) {
      const std::string zeroed = ZeroedLocals(ue);
      out += "      if (gw_likely(" + r.plan.fast_check + ")) {\n" + r.plan.fast_setup;
      out += "      for (uint32_t t = lo; t < hi; ++t) {\n" + zeroed + r.before + r.fast + store + "      }\n";
      out += "      } else\n";
    }
    out += "      for (uint32_t t = lo; t < hi; ++t) {\n" + decl + r.before + r.inner + store + "      }\n    } else\n";
    return out;
  }

  std::optional<RangePlan> AffineRange(const Inst& bra, const std::vector<ThreadItem>& before,
                                       const std::vector<ThreadItem>& region) {
    AffineState st;
    const Inst* sp = nullptr;
    for (const ThreadItem& it : before) {  // pure arithmetic, nothing live after the block
      const Inst& in = p_.code[it.pc];
      if (in.guard != kNoSlot || in.op == Op::kLd || in.op == Op::kSt || in.op == Op::kAtom || in.op == Op::kLdKParam) {
        return std::nullopt;
      }
      std::vector<uint32_t> reads, writes;
      cfg_.ReadsWrites(in, reads, writes);
      for (uint32_t w : writes) {
        if (live_after_.count(w)) return std::nullopt;
      }
      if (std::find(writes.begin(), writes.end(), bra.guard) != writes.end()) {  // the guard's last writer
        sp = in.op == Op::kSetp && in.d[0] == bra.guard ? &in : nullptr;
      }
      AffineStep(st, in);
    }
    if (sp == nullptr || (sp->flags & (kHasPred3 | kDualDst)) || sp->d[1] != kNoSlot) return std::nullopt;
    if (!IsIntLike(sp->t) || Bits(sp->t) != 32) return std::nullopt;
    auto x = Low32(st, AffineOf(st, sp->s[0]));
    auto bound = AffineOf(st, sp->s[1]);
    if (!x || x->k != 1 || !bound || bound->k != 0) return std::nullopt;
    for (const ThreadItem& it : before) {  // no source of the setp is written after it
      const Inst& in = p_.code[it.pc];
      if (&in <= sp) continue;
      std::vector<uint32_t> reads, writes;
      cfg_.ReadsWrites(in, reads, writes);
      for (uint32_t w : writes) {
        if (w == sp->s[0] || w == sp->s[1]) return std::nullopt;
      }
    }
    const bool is_signed = ptx::IsSigned(sp->t);
    if (is_signed) NonNegative32(st, *x);
    const std::string B =
        is_signed ? "(int64_t)(int32_t)(" + bound->base + ")" : "(int64_t)(uint32_t)(" + bound->base + ")";
    // x(t) = base + t <op> B, for t < T: with m = B - base, a prefix [0, e) or suffix [e, T).
    std::string e;
    bool prefix = true;
    switch (static_cast<Cmp>(sp->cmp)) {
      case Cmp::kLt:
      case Cmp::kLo: e = "m"; break;
      case Cmp::kLe:
      case Cmp::kLs: e = "m + 1"; break;
      case Cmp::kGt:
      case Cmp::kHi: e = "m + 1", prefix = false; break;
      case Cmp::kGe:
      case Cmp::kHs: e = "m", prefix = false; break;
      default: return std::nullopt;
    }
    if (is_signed && (static_cast<Cmp>(sp->cmp) == Cmp::kLo || static_cast<Cmp>(sp->cmp) == Cmp::kLs ||
                      static_cast<Cmp>(sp->cmp) == Cmp::kHi || static_cast<Cmp>(sp->cmp) == Cmp::kHs)) {
      return std::nullopt;
    }
    if (st.conds.size() > kMaxAffineConds) return std::nullopt;
    RangePlan plan;
    std::string conds;
    for (const std::string& c : st.conds) conds += " && " + c;
    plan.conds = conds;
    const bool region_where_x = bra.guard_negated;
    plan.lohi = "      const int64_t m = " + B + " - (int64_t)(" + x->base + ");\n";
    plan.lohi += "      const int64_t ex = " + e + ";\n";
    plan.lohi += "      const uint32_t e = ex <= 0 ? 0u : ex >= (int64_t)T ? T : (uint32_t)ex;\n";
    plan.lohi +=
        prefix == region_where_x ? "      const uint32_t lo = 0, hi = e;\n" : "      const uint32_t lo = e, hi = T;\n";
    // The region's accesses, evaluated in order after the setp's block.
    AffineState rs = st;
    rs.conds.clear();
    std::string check, setup;
    for (const ThreadItem& it : region) {
      const Inst& in = p_.code[it.pc];
      if (in.op == Op::kLd || in.op == Op::kSt || in.op == Op::kAtom) {
        if (in.op == Op::kAtom || (in.flags & kVolatile) || (in.mem != Mem::kGlobal && in.mem != Mem::kShared)) {
          return plan;
        }
        const unsigned bytes = ptx::TypeSize(in.t) * in.vec;
        auto addr = AffineOf(rs, in.s[0]);
        if (addr && !addr->wide && addr->low32 && in.mem == Mem::kShared) {  // a 32-bit shared address
          NonNegative32(rs, *addr);  // (then its sign or zero extension is the value itself)
          addr->wide = true;
        }
        if (!addr || !addr->wide || (in.mem == Mem::kGlobal && addr->k != bytes)) return plan;
        const std::string P = std::to_string(in.offset), K = std::to_string(addr->k) + "ull";
        const std::string first = "(" + addr->base + " + (uint64_t)" + P + "ull + " + K + " * lo)";
        const std::string last = "(" + addr->base + " + (uint64_t)" + P + "ull + " + K + " * (hi - 1))";
        const std::string N = std::to_string(bytes), pc = std::to_string(it.pc);
        check += " && " + first + " <= " + last;
        if (in.mem == Mem::kGlobal) {
          check += " && " + first + " - gb" + pc + " < gn" + pc + " && " + last + " - gb" + pc + " < gn" + pc;
          setup += "        const uint64_t cl" + pc + " = " + addr->base + " + (uint64_t)" + P +
                   "ull; uint8_t* const gwr" + pc + " = gh" + pc + ";\n";
        } else {
          check += " && shsz >= " + N + " && " + last + " <= shsz - " + N;
        }
      }
      AffineStep(rs, in);
    }
    for (const std::string& c : rs.conds) check += " && " + c;
    if (rs.conds.size() > kMaxAffineConds) return plan;
    plan.fast = true;
    plan.fast_check = "hi > lo" + check;
    plan.fast_setup = setup;
    return plan;
  }

  // Whether `bra` (ending block b, guarded by a thread-dependent predicate) skips exactly the
  // next block, which goes on to the branch target (the join) with nothing in between: no
  // barrier, exit or other branch, and no more than 64 instructions.
  bool IfRegion(uint32_t b, const Inst& bra, uint32_t* join) const {
    if (bra.op != Op::kBra || b + 1 >= cfg_.starts.size()) return false;
    const uint32_t f = b + 1, j = cfg_.BlockOf(bra.target);
    if (j <= f || cfg_.starts[j] != bra.target) return false;
    const uint32_t fend = cfg_.BlockEnd(f);
    if (fend - cfg_.starts[f] > 64 || cfg_.host.count(cfg_.starts[f])) return false;
    const Inst& last = p_.code[fend - 1];
    if (IsTerminator(last.op)) {
      if (last.op != Op::kBra || last.guard != kNoSlot || last.target != bra.target) return false;
    } else if (cfg_.BlockOf(fend) != j) {
      return false;
    }
    *join = j;
    return true;
  }

  // The address of a `bytes`-byte access by instruction `pc`, into `p` (faults return).
  std::string Address(const Inst& in, uint32_t pc, unsigned bytes, bool store) {
    std::string a =
        "uint64_t A = " + R(in.s[0]) + " + (uint64_t)" + std::to_string(static_cast<uint64_t>(in.offset)) + "ull;";
    const std::string B = std::to_string(bytes), P = std::to_string(pc), st = store ? "1" : "0";
    const std::string slow =
        "gw_slow(c, " + P + "u, " + std::to_string(static_cast<int>(in.mem)) + "u, A, " + B + "u, t, " + st + ")";
    switch (in.mem) {
      case Mem::kGlobal:  // the region's fields are in locals (Hoisted()), reloaded after the slow path
        hoisted_[pc] = bytes;
        if (store) stores_.insert(pc);
        if (access_ == Access::kCheckAhead) {
          // Masks, not conditions: the compiler keeps min, max and or reductions it can vectorise.
          return a + " const uint64_t m = -(uint64_t)(" + access_guard_ + "); bad |= m & -(uint64_t)((A - gb" + P +
                 ") >= gn" + P + "); { const uint64_t y = A - (uint64_t)t * " + B + "; const uint64_t x = y | ~m; cl" +
                 P + " = x < cl" + P + " ? x : cl" + P + "; const uint64_t z = y & m; ch" + P + " = z > ch" + P +
                 " ? z : ch" + P + "; }";
        }
        if (access_ == Access::kContiguous) {
          return a + " (void)A; uint8_t* p = gwr" + P + " + (cl" + P + " - gb" + P + ") + (uint64_t)t * " + B + ";";
        }
        return a + " uint8_t* p; { const uint64_t o = A - gb" + P + "; if (gw_likely(o < gn" + P + ")) p = gh" + P +
               " + o; else { p = " + slow + "; if (!p) gw_fault gw_region(" + P + ", " + B + ") } }";
      case Mem::kShared:
        if (access_ == Access::kCheckAhead) {
          return a + " bad |= -(uint64_t)(" + access_guard_ + ") & -(uint64_t)!(shsz >= " + B + " && A <= shsz - " + B +
                 ");";
        }
        if (access_ == Access::kContiguous) return a + " uint8_t* p = sh + A;";
        return a + " uint8_t* p = gw_likely(shsz >= " + B + " && A <= shsz - " + B + ") ? sh + A : " + slow +
               "; if (!p) gw_fault";
      default: return a + " uint8_t* p = " + slow + "; if (!p) gw_fault";
    }
  }

  // A uniform instruction (all mode): its destinations get new versions, const locals computed
  // once; a guarded one keeps the old value where its guard is false.
  Result<std::string> Statement(const Inst& in, uint32_t pc, uint32_t& temp) {
    std::vector<std::pair<uint32_t, std::string>> fresh;
    std::string guard;
    if (in.guard != kNoSlot) guard = std::string(in.guard_negated ? "!" : "") + "(" + R(in.guard) + " & 1)";
    std::string decl;
    for (uint32_t d : in.d) {
      if (d == kNoSlot) continue;
      std::string name = "v" + std::to_string(temp++);
      decl += "uint64_t " + name + " = " + R(d) + "; ";  // the old value (kept where the guard is false)
      fresh.push_back({d, name});
    }
    auto dest = [&](uint32_t slot) -> std::string {
      for (auto& [s, name] : fresh) {
        if (s == slot) return name;
      }
      return R(slot);
    };
    // Sources read the versions before this instruction (R() names them until they are published).
    GPUWASM_ASSIGN_OR_RETURN(std::string stmt, Compute(in, pc, dest));
    for (auto& [s, name] : fresh) uversion_[s] = name;
    if (!guard.empty()) return decl + "if (" + guard + ") { " + stmt + " }";
    return decl + stmt;
  }

  // The statement computing `in`; `dst(slot)` names where a destination goes (sources use R()).
  template <class Dst>
  Result<std::string> Compute(const Inst& in, uint32_t pc, Dst dst) {
    const Type t = in.t;
    auto d = [&](int k = 0) { return dst(in.d[k]); };
    switch (in.op) {
      case Op::kNop: return std::string(";");
      case Op::kMov: return d() + " = " + R(in.s[0]) + ";";
      case Op::kLdKParam: {
        const unsigned size = ptx::TypeSize(t);
        if (in.offset < 0) return Unsupported(in, "negative parameter offset");
        const std::string off = std::to_string(in.offset), sz = std::to_string(size);
        std::string s = "{ uint64_t v = 0; if (" + off + "ull + " + sz + " > c->params_size) { c->address(c, " +
                        std::to_string(pc) + "u, " + std::to_string(kNativeParamSpace) + "u, " + off + "ull, " + sz +
                        "u, 0, 0); return 1; } memcpy(&v, c->params + " + off + ", " + sz + ");";
        if (ptx::IsSigned(t) && size < 8) {
          const std::string sh = std::to_string(64 - 8 * size);
          s += " v = (uint64_t)((int64_t)(v << " + sh + ") >> " + sh + ");";
        }
        return s + " " + d() + " = v; }";
      }
      case Op::kCvta: {
        const std::string add = in.mem == Mem::kShared  ? WindowC(kSharedWindow)
                                : in.mem == Mem::kLocal ? WindowC(kLocalWindow)
                                                        : "0ull";
        return d() + " = " + R(in.s[0]) + " + " + add + ";";
      }
      case Op::kCvtaTo: {
        if (in.mem != Mem::kShared && in.mem != Mem::kLocal) return d() + " = " + R(in.s[0]) + ";";
        const std::string sub = WindowC(in.mem == Mem::kShared ? kSharedWindow : kLocalWindow);
        return "{ uint64_t a = " + R(in.s[0]) + "; " + d() + " = a >= " + sub + " ? a - " + sub + " : a; }";
      }
      case Op::kLd:
      case Op::kSt: {
        const unsigned size = ptx::TypeSize(t);
        if (size != 1 && size != 2 && size != 4 && size != 8) return Unsupported(in, "access size");
        const bool store = in.op == Op::kSt;
        std::string s = "{ " + Address(in, pc, size * in.vec, store);
        if (access_ == Access::kCheckAhead) {  // whether it would fit, nothing more (its value is unused)
          for (unsigned k = 0; !store && k < in.vec; ++k) s += " " + d(k) + " = 0;";
          return s + " }";
        }
        const char* u = size == 1 ? "uint8_t" : size == 2 ? "uint16_t" : size == 4 ? "uint32_t" : "uint64_t";
        const char* sg = size == 1 ? "int8_t" : size == 2 ? "int16_t" : size == 4 ? "int32_t" : "int64_t";
        for (unsigned k = 0; k < in.vec; ++k) {
          const std::string at = "p + " + std::to_string(k * size);
          if (store) {
            s += std::string(" { ") + u + " x = (" + u + ")" + R(in.d[k]) + "; memcpy(" + at + ", &x, " +
                 std::to_string(size) + "); }";
          } else if (in.flags & kVolatile) {  // read each time: a spin on a flag another thread sets
            s += std::string(" ") + d(k) + " = (uint64_t)*(volatile " + (ptx::IsSigned(t) && size < 8 ? sg : u) +
                 " *)(" + at + ");";
          } else if (ptx::IsSigned(t) && size < 8) {
            s += std::string(" { ") + sg + " x; memcpy(&x, " + at + ", " + std::to_string(size) + "); " + d(k) +
                 " = (uint64_t)(int64_t)x; }";
          } else {
            s += std::string(" { ") + u + " x; memcpy(&x, " + at + ", " + std::to_string(size) + "); " + d(k) +
                 " = (uint64_t)x; }";
          }
        }
        return s + " }";
      }
      case Op::kMulWide:
      case Op::kMadWide: {
        const Type st = in.t2;
        if (!IsIntLike(st) || Bits(st) > 32) return Unsupported(in, "wide multiply type");
        const char* w = ptx::IsSigned(st) ? "int64_t" : "uint64_t";
        std::string e =
            std::string("(uint64_t)((") + w + ")" + As(st, in.s[0]) + " * (" + w + ")" + As(st, in.s[1]) + ")";
        if (in.op == Op::kMadWide) e += " + " + R(in.s[2]);
        if (Bits(st) == 16) e = "((" + e + ") & 0xffffffffull)";
        return d() + " = " + e + ";";
      }
      case Op::kAtom: return Atomic(in, pc, d());
      case Op::kSetp: return Setp(in, d(0), (in.flags & kDualDst) ? d(1) : std::string());
      case Op::kSelp: {
        const bool neg = in.flags & kNegPred3;
        return d() + " = ((" + R(in.s[2]) + " & 1) != " + (neg ? "1" : "0") + ") ? " + R(in.s[0]) + " : " + R(in.s[1]) +
               ";";
      }
      case Op::kCvt: {
        if (!IsIntLike(t) || !IsIntLike(in.t2) || (in.flags & kSat)) return Unsupported(in, "cvt form");
        return d() + " = " + Store(t, As(in.t2, in.s[0])) + ";";
      }
      default: break;
    }
    if (t == Type::kF32 || t == Type::kF64) return Float(in, d());
    if (t == Type::kPred) {
      const std::string a = "(" + R(in.s[0]) + " & 1)";
      const std::string b = in.s[1] != kNoSlot ? "(" + R(in.s[1]) + " & 1)" : a;
      switch (in.op) {
        case Op::kAnd: return d() + " = " + a + " & " + b + ";";
        case Op::kOr: return d() + " = " + a + " | " + b + ";";
        case Op::kXor: return d() + " = " + a + " ^ " + b + ";";
        case Op::kNot: return d() + " = !" + a + ";";
        default: return Unsupported(in, "predicate instruction");
      }
    }
    if (!IsIntLike(t)) return Unsupported(in, "instruction type");
    return Int(in, d());
  }

  // A C expression of the register as the instruction's type T (sign- or zero-extended).
  std::string As(Type t, uint32_t slot) { return std::string("(") + CType(t) + ")" + R(slot); }

  // Whether `in`'s first `nsrc` sources and `ndst` destinations are register slots.
  bool HasSlots(const Inst& in, int nsrc, int ndst) const {
    for (int i = 0; i < nsrc; ++i) {
      if (in.s[i] >= p_.slot_count) return false;
    }
    for (int i = 0; i < ndst; ++i) {
      if (in.d[i] >= p_.slot_count) return false;
    }
    return true;
  }

  // An unguarded shfl.sync's block: while every thread of the CTA is live and together in full
  // warps, C over the register file with CtaExec::Execute's semantics (the source lane of each lane
  // from b and c, its own where out of range; the member mask is not read); otherwise `host`, the
  // interpreter's code.
  std::string Shuffle(const Inst& in, const std::string& B, const std::string& fall, const std::string& host) const {
    auto slot = [](uint32_t s) { return "R + (uint64_t)" + std::to_string(s) + "u * S"; };
    std::string lane;
    switch (static_cast<ShflMode>(in.cmp)) {
      case ShflMode::kUp: lane = "j = l - bv; p = j >= mx;"; break;
      case ShflMode::kDown: lane = "j = l + bv; p = j <= mx;"; break;
      case ShflMode::kBfly: lane = "j = l ^ bv; p = j <= mx;"; break;
      case ShflMode::kIdx: lane = "j = mn | (bv & ~sg); p = j <= mx;"; break;
    }
    const bool dual = (in.flags & kDualDst) != 0;
    std::string f = "static int gw_b" + B + "(struct gw_ctx* c) {\n";
    f += "  if (!c->all || c->live != c->threads || (c->threads & 31u) != 0) { " + host + " }\n";
    f += "  uint64_t* const R = c->regs; const uint64_t S = c->stride; const uint32_t T = c->threads;\n";
    f += "  const uint64_t* a = " + slot(in.s[0]) + "; const uint64_t* b = " + slot(in.s[1]) +
         "; const uint64_t* k = " + slot(in.s[2]) + ";\n";
    f += "  uint64_t* d = " + slot(in.d[0]) + ";" + (dual ? " uint64_t* q = " + slot(in.d[1]) + ";" : "") + "\n";
    // b and c alike for every thread (the usual: constants in registers) are read once.
    const bool uniform = cfg_.IsUniform(in.s[1]) && cfg_.IsUniform(in.s[2]);
    const std::string bc = "const int bv = (int)(b[X] & 31); const uint32_t cv = (uint32_t)k[X];";
    auto at = [&](const std::string& x) {
      std::string r = bc;
      for (size_t i; (i = r.find('X')) != std::string::npos;) r.replace(i, 1, x);
      return r;
    };
    if (uniform) f += "  " + at("c->first") + "\n";
    f += "  for (uint32_t w = 0; w < T; w += 32) {\n    uint32_t v[32]; uint8_t ok[32];\n";
    f += "    for (int l = 0; l < 32; ++l) {\n";
    if (!uniform) f += "      " + at("w + l") + "\n";
    f += "      const int cl = (int)(cv & 31), sg = (int)((cv >> 8) & 31), mx = (l & sg) | (cl & ~sg), mn = l & sg;\n";
    f += "      int j, p; (void)mn; " + lane + " if (!p || j < 0 || j > 31) j = l;\n";
    f += "      v[l] = (uint32_t)a[w + (uint32_t)j]; ok[l] = (uint8_t)p;\n    }\n";
    f += "    for (int l = 0; l < 32; ++l) { d[w + l] = v[l];" + std::string(dual ? " q[w + l] = ok[l];" : "") +
         " }\n    (void)ok;\n  }\n";
    f += "  c->instructions += T; c->go = " + fall + "u;\n  return 0;\n}\n";
    return f;
  }

  // atom and red on 32- and 64-bit global or shared memory, as CtaExec::Atomic: the access checked
  // like a store, then its alignment; shared memory read, changed and written (a CTA runs on one
  // host thread), global memory with the host's atomics. The old value, zero-extended, goes to `d`.
  Result<std::string> Atomic(const Inst& in, uint32_t pc, const std::string& d) {
    const Type t = in.t;
    const unsigned size = ptx::TypeSize(t);
    const auto op = static_cast<AtomOp>(in.cmp);
    const bool fl = t == Type::kF32 || t == Type::kF64;
    if ((size != 4 && size != 8) || (in.mem != Mem::kGlobal && in.mem != Mem::kShared) || in.vec > 1 ||
        access_ != Access::kChecked) {
      return Unsupported(in, "atomic form");
    }
    if (fl ? (op != AtomOp::kAdd && op != AtomOp::kMin && op != AtomOp::kMax && op != AtomOp::kExch) : !IsIntLike(t)) {
      return Unsupported(in, "atomic operation on this type");
    }
    const std::string T =
        fl ? (size == 4 ? "float" : "double")
           : (ptx::IsSigned(t) ? (size == 4 ? "int32_t" : "int64_t") : (size == 4 ? "uint32_t" : "uint64_t"));
    const std::string U = size == 4 ? "uint32_t" : "uint64_t", Z = std::to_string(size);
    auto value = [&](const std::string& name, uint32_t slot) {  // an operand as a T
      if (slot == kNoSlot) return T + " " + name + " = 0; (void)" + name + ";";
      return T + " " + name + " = " + (fl ? (size == 4 ? "gw_f(" : "gw_d(") + R(slot) + ")" : "(" + T + ")" + R(slot)) +
             ";";
    };
    std::string apply;  // the new value from the old one (o) and the operands (x, y)
    switch (op) {
      case AtomOp::kAdd: apply = fl ? "o + x" : "(" + T + ")((" + U + ")o + (" + U + ")x)"; break;
      case AtomOp::kMin: apply = "x < o ? x : o"; break;
      case AtomOp::kMax: apply = "o < x ? x : o"; break;
      case AtomOp::kInc: apply = "o >= x ? (" + T + ")0 : (" + T + ")((" + U + ")o + 1)"; break;
      case AtomOp::kDec: apply = "(o == 0 || o > x) ? x : (" + T + ")((" + U + ")o - 1)"; break;
      case AtomOp::kAnd: apply = "o & x"; break;
      case AtomOp::kOr: apply = "o | x"; break;
      case AtomOp::kXor: apply = "o ^ x"; break;
      case AtomOp::kExch: apply = "x"; break;
      case AtomOp::kCas: apply = "o == x ? y : o"; break;
    }
    std::string s = "{ " + Address(in, pc, size, /*store=*/true);
    s += " if ((((uintptr_t)p) | A) & " + std::to_string(size - 1) + "u) { (void)c->address(c, " + std::to_string(pc) +
         "u, " + std::to_string(kNativeMisalignedAtomic) + "u, A, " + Z + "u, t, 1); gw_fault }";
    s += " " + value("x", in.s[1]) + " " + value("y", in.s[2]) + " " + T + " o;";
    if (in.mem == Mem::kShared) {
      s += " memcpy(&o, p, " + Z + "); { " + T + " v = " + apply + "; memcpy(p, &v, " + Z + "); }";
    } else {
      s += " " + U + " cur = __atomic_load_n((" + U + "*)p, __ATOMIC_RELAXED); for (;;) { memcpy(&o, &cur, " + Z +
           "); " + T + " v = " + apply + "; " + U + " nb; memcpy(&nb, &v, " + Z +
           "); if (__atomic_compare_exchange_n((" + U +
           "*)p, &cur, nb, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) break; }";
    }
    s += " { " + U + " ob; memcpy(&ob, &o, " + Z + "); " + d + " = (uint64_t)ob; } }";
    return s;
  }
  // The 64-bit register value of a T-typed C expression (the interpreter's Store).
  static std::string Store(Type t, const std::string& e) {
    return std::string("(uint64_t)(") + CType(t) + ")(" + e + ")";
  }

  Result<std::string> Int(const Inst& in, const std::string& d) {
    const Type t = in.t;
    const std::string T = CType(t), U = UType(t);
    auto W = [&](uint32_t s) { return "(uint64_t)" + As(t, s); };  // extended to 64 bits
    const std::string A = W(in.s[0]);
    const std::string Bv = in.s[1] != kNoSlot ? W(in.s[1]) : A;
    const std::string bits = std::to_string(Bits(t));
    switch (in.op) {
      case Op::kAdd:
        if (in.flags & kSat) return Unsupported(in, "add.sat");
        return d + " = " + Store(t, A + " + " + Bv) + ";";
      case Op::kSub:
        if (in.flags & kSat) return Unsupported(in, "sub.sat");
        return d + " = " + Store(t, A + " - " + Bv) + ";";
      case Op::kMulLo: return d + " = " + Store(t, A + " * " + Bv) + ";";
      case Op::kMadLo: return d + " = " + Store(t, A + " * " + Bv + " + " + W(in.s[2])) + ";";
      case Op::kMin:
      case Op::kMax: {
        const std::string x = As(t, in.s[0]), y = As(t, in.s[1]);
        const char* op = in.op == Op::kMin ? " < " : " > ";
        return "{ " + T + " x = " + x + ", y = " + y + "; " + d + " = " +
               Store(t, std::string("x") + op + "y ? x : y") + "; }";
      }
      case Op::kAnd: return d + " = " + Store(t, A + " & " + Bv) + ";";
      case Op::kOr: return d + " = " + Store(t, A + " | " + Bv) + ";";
      case Op::kXor: return d + " = " + Store(t, A + " ^ " + Bv) + ";";
      case Op::kNot: return d + " = " + Store(t, "~" + A) + ";";
      case Op::kNeg: return d + " = " + Store(t, "0ull - " + A) + ";";
      case Op::kShl:
        return "{ uint32_t s = (uint32_t)" + R(in.s[1]) + "; " + d + " = s >= " + bits +
               " ? 0 : " + Store(t, "(uint64_t)(" + U + ")" + As(t, in.s[0]) + " << s") + "; }";
      case Op::kShr:
        if (ptx::IsSigned(t)) {
          return "{ uint32_t s = (uint32_t)" + R(in.s[1]) + "; " + T + " x = " + As(t, in.s[0]) + "; " + d + " = " +
                 Store(t, "s >= " + bits + " ? (x < 0 ? -1 : 0) : (x >> s)") + "; }";
        }
        return "{ uint32_t s = (uint32_t)" + R(in.s[1]) + "; " + T + " x = " + As(t, in.s[0]) + "; " + d + " = " +
               Store(t, "s >= " + bits + " ? 0 : (x >> s)") + "; }";
      default: return Unsupported(in, "integer instruction");
    }
  }

  Result<std::string> Float(const Inst& in, const std::string& d) {
    const bool f64 = in.t == Type::kF64;
    if ((in.flags & (kFtz | kSat)) || (in.rnd != Round::kDefault && in.rnd != Round::kRn)) {
      return Unsupported(in, "float rounding, flushing or saturation");
    }
    const char* get = f64 ? "gw_d(" : "gw_f(";
    const char* put = f64 ? "gw_db(" : "gw_fb(";
    auto v = [&](uint32_t s) { return std::string(get) + R(s) + ")"; };
    switch (in.op) {
      case Op::kAdd: return d + " = " + put + v(in.s[0]) + " + " + v(in.s[1]) + ");";
      case Op::kSub: return d + " = " + put + v(in.s[0]) + " - " + v(in.s[1]) + ");";
      case Op::kMulLo: return d + " = " + put + v(in.s[0]) + " * " + v(in.s[1]) + ");";
      case Op::kFma:
        return d + " = " + put + (f64 ? "fma(" : "fmaf(") + v(in.s[0]) + ", " + v(in.s[1]) + ", " + v(in.s[2]) + "));";
      // The interpreter's FloatOp, term for term: the same operations of the C library (the
      // approximate forms are computed exactly there too), min and max with its NaN and zero rules.
      case Op::kDiv: return d + " = " + put + v(in.s[0]) + " / " + v(in.s[1]) + ");";
      case Op::kMin:
      case Op::kMax:
        return d + " = " + put + "gw_" + (in.op == Op::kMin ? "min" : "max") + (f64 ? "d(" : "f(") + v(in.s[0]) + ", " +
               v(in.s[1]) + "));";
      case Op::kNeg: return d + " = " + put + "-" + v(in.s[0]) + ");";
      case Op::kRcp: return d + " = " + put + (f64 ? "1.0 / " : "1.0f / ") + v(in.s[0]) + ");";
      case Op::kRsqrt: return d + " = " + put + (f64 ? "1.0 / sqrt(" : "1.0f / sqrtf(") + v(in.s[0]) + "));";
      case Op::kCopysign:
        return d + " = " + put + (f64 ? "copysign(" : "copysignf(") + v(in.s[1]) + ", " + v(in.s[0]) + "));";
      case Op::kAbs:
      case Op::kSqrt:
      case Op::kSin:
      case Op::kCos:
      case Op::kEx2:
      case Op::kLg2:
      case Op::kTanh: {
        const char* fn = in.op == Op::kAbs    ? "fabs"
                         : in.op == Op::kSqrt ? "sqrt"
                         : in.op == Op::kSin  ? "sin"
                         : in.op == Op::kCos  ? "cos"
                         : in.op == Op::kEx2  ? "exp2"
                         : in.op == Op::kLg2  ? "log2"
                                              : "tanh";
        return d + " = " + put + fn + (f64 ? "(" : "f(") + v(in.s[0]) + "));";
      }
      default: return Unsupported(in, "float instruction");
    }
  }

  Result<std::string> Setp(const Inst& in, const std::string& d0, const std::string& d1) {
    const Type t = in.t;
    std::string cmp;
    if (t == Type::kF32 || t == Type::kF64) {
      if (in.flags & kFtz) return Unsupported(in, "setp.ftz");
      const char* get = t == Type::kF64 ? "gw_d(" : "(double)gw_f(";
      cmp = "gw_cmpf(" + std::to_string(in.cmp) + ", " + get + R(in.s[0]) + "), " + get + R(in.s[1]) + "))";
    } else if (IsIntLike(t)) {
      const char* op = nullptr;
      switch (static_cast<Cmp>(in.cmp)) {
        case Cmp::kEq: op = "=="; break;
        case Cmp::kNe: op = "!="; break;
        case Cmp::kLt:
        case Cmp::kLo: op = "<"; break;
        case Cmp::kLe:
        case Cmp::kLs: op = "<="; break;
        case Cmp::kGt:
        case Cmp::kHi: op = ">"; break;
        case Cmp::kGe:
        case Cmp::kHs: op = ">="; break;
        default: break;
      }
      cmp = op == nullptr ? std::string("0") : "(" + As(t, in.s[0]) + " " + op + " " + As(t, in.s[1]) + ")";
    } else {
      return Unsupported(in, "setp type");
    }
    const bool pred3 = in.flags & kHasPred3;
    std::string s = "{ int x = " + cmp + "; int y = !x;";
    if (pred3) {
      const std::string cv = "((" + R(in.s[2]) + " & 1) != " + ((in.flags & kNegPred3) ? "1" : "0") + ")";
      s += " int cv = " + cv + ";";
      switch (static_cast<BoolOp>(in.bool_op)) {
        case BoolOp::kAnd: s += " x = x && cv; y = y && cv;"; break;
        case BoolOp::kOr: s += " x = x || cv; y = y || cv;"; break;
        default: s += " x = x != cv; y = y != cv;"; break;
      }
    }
    s += " " + d0 + " = (uint64_t)x;";
    if (!d1.empty())
      s += " " + d1 + " = (uint64_t)y;";
    else
      s += " (void)y;";
    return s + " }";
  }

  const Program& p_;
  const KernelEntry& k_;
  KernelCfg cfg_;
  std::set<uint32_t> used_, uused_;
  std::map<uint32_t, std::string> uversion_;
  std::set<uint32_t> crossing_, global_slots_;
  std::vector<std::set<uint32_t>> live_in_;   // per block (Liveness())
  std::set<uint32_t> live_after_;             // a body's slots live after it (what it stores back)
  std::vector<uint32_t> idom_;                // per block (Dominators()); empty in a kernel with calls
  std::vector<std::vector<uint32_t>> preds_;  // per block: its predecessors
  std::map<uint32_t, Reaching> reaching_;     // ReachingOf()'s, per slot
  static constexpr size_t kMaxReachingSlots = 1024;
  std::vector<std::vector<uint32_t>> defs_of_;  // per slot: the pcs that write it (ReachingOf())
  uint32_t cur_block_ = 0;                      // the block Body() writes
  size_t affine_work_ = 0;                      // DefinedValue() calls for it
  std::set<uint32_t> succ_, ptrs_;
  std::map<uint32_t, unsigned> hoisted_;  // a body's global accesses: pc -> bytes (Address())
  std::set<uint32_t> stores_;             // ... those that store
  std::set<uint32_t> stored_;             // a body's slots its threads store back (crossing blocks)
  std::string helpers_;                   // functions the block's function calls (CheckedAhead())
  Access access_ = Access::kChecked;      // how Address() writes an access
  std::string access_guard_;              // kCheckAhead: when the access happens
  std::vector<uint32_t> region_;          // instructions of an if-region inlined into the block
  bool all_ = false;                      // generating the all-threads-together body
  bool bad_operand_ = false;
};

}  // namespace

Result<NativeSource> TranslateKernel(const Program& program, const KernelEntry& kernel) {
  return Translator(program, kernel).Run();
}

}  // namespace gpuwasm::device::cpu
