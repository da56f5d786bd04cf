// The CPU device's executable form of a PTX module: decoded instructions over register slots.
//
// Every operand is a slot index into a warp's register file (uint64_t per lane): registers,
// immediates and symbol addresses (constant slots, filled once per warp), and special registers
// (%tid.x ..., filled per warp). Handlers therefore never test operand kinds. All functions of a
// module share one slot space; calls copy parameter slots (recursion is refused at load).
//
// Thread-safety: immutable after Decode; shared by all launches.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "device/device.h"
#include "ptx/ast.h"

namespace gpuwasm::device::cpu {

enum class Op : uint8_t {
  kNop,
  kMov,
  kPack,
  kUnpack,
  kLdKParam,
  kLd,
  kSt,
  kCvta,
  kCvtaTo,
  kAdd,
  kSub,
  kMulLo,
  kMulHi,
  kMulWide,
  kMadLo,
  kMadHi,
  kMadWide,
  kFma,
  kDiv,
  kRem,
  kMin,
  kMax,
  kAbs,
  kNeg,
  kAnd,
  kOr,
  kXor,
  kNot,
  kCnot,
  kShl,
  kShr,
  kPopc,
  kClz,
  kBrev,
  kBfind,
  kBfe,
  kBfi,
  kPrmt,
  kShf,
  kLop3,
  kSetp,
  kSelp,
  kSqrt,
  kRcp,
  kRsqrt,
  kSin,
  kCos,
  kEx2,
  kLg2,
  kTanh,
  kCopysign,
  kCvt,
  kTestp,
  kAddC,
  kSubC,
  kMadC,
  kDp4a,
  kDp2a,
  kVideo,
  kVideoScalar,
  kCvtPack,
  kCvtMini,
  kMul24,
  kMad24,
  kSad,
  kSzext,
  kBmsk,
  kFns,
  kSet,
  kSlct,  // cmp=1: mul24/mad24 .hi; kWrap: szext/bmsk .wrap
  kBra,
  kCall,
  kRet,
  kExit,
  kBar,
  kWarpSync,
  kAtom,
  kShfl,
  kVote,
  kRedux,
  kMatch,
  kActivemask,
  kClock,
  kTrap,
  kCpAsync,   // cp.async: done at once (see Decoder::CpAsync)
  kIsspacep,  // mem: the space asked about; cmp 1: .const or .param (never a generic address here)
};

// Memory state spaces as the executor sees them.
enum class Mem : uint8_t { kGlobal, kShared, kLocal, kGeneric };

// Rounding: rn (default) rz rm rp; for float->int and float->float-integral: rni rzi rmi rpi;
// rna (nearest, ties away from zero) for cvt to tf32 only.
enum class Round : uint8_t { kDefault, kRn, kRz, kRm, kRp, kRni, kRzi, kRmi, kRpi, kRna };  // rna: tf32

enum Flag : uint16_t {
  kFtz = 1,
  kSat = 2,
  kApprox = 4,
  kShiftAmt = 8,
  kWrap = 16,
  kLeft = 32,
  kHasPred3 = 64,
  kNegPred3 = 128,
  kNegSrc0 = 256,      // vote: the predicate operand is negated
  kDualDst = 512,      // setp/shfl: a second (predicate) destination
  kVolatile = 1024,    // ld/st.volatile
  kCarryIn = 2048,     // addc/subc/madc: adds the carry flag (slot s[3])
  kCarryOut = 4096,    // .cc: writes the carry flag (slot d[1])
  kAccumulate = 8192,  // video SIMD .add: the elements' sum plus c, not a merge
  kRelu = 16384,       // cvt .relu: negative results become +0
  kSatFinite = 32768,  // cvt .satfinite: infinities and overflows become the largest finite value
};

// The narrow float formats of cvt (Op::kCvtMini, Inst::cmp): fp8, fp6, fp4 pairs, ue8m0 pairs and
// tf32. Inst::bool_op: kMiniFromHalves (a is f16x2/bf16x2, t2), kMiniToHalves (d is f16x2/bf16x2,
// t); neither: two f32 sources a (upper) and b (lower), or tf32's one.
enum class MiniFormat : uint8_t { kE4M3, kE5M2, kE2M1, kE2M3, kE3M2, kUE8M0, kTF32 };
constexpr uint8_t kMiniFromHalves = 1, kMiniToHalves = 2;

enum class Cmp : uint8_t {
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kLo,
  kLs,
  kHi,
  kHs,
  kEqu,
  kNeu,
  kLtu,
  kLeu,
  kGtu,
  kGeu,
  kNum,
  kNan
};
enum class BoolOp : uint8_t { kNone, kAnd, kOr, kXor };
enum class AtomOp : uint8_t { kAdd, kMin, kMax, kInc, kDec, kAnd, kOr, kXor, kExch, kCas };
enum class ShflMode : uint8_t { kUp, kDown, kBfly, kIdx };
enum class VoteMode : uint8_t { kAll, kAny, kUni, kBallot };
enum class ReduxOp : uint8_t { kAdd, kMin, kMax, kAnd, kOr, kXor };
// Video instructions (Inst::cmp). SIMD (kVideo, vop2/vop4; Inst::vec elements): t is the
// destination type, t2 a's and b's (vset: t2 only, the comparison in Inst::bool_op as a Cmp);
// Inst::sel holds the selectors and the mask (SimdSel*). Scalar (kVideoScalar: vadd ... vset,
// vmad): t is the destination type; Inst::sel holds everything else (ScalarSel*).
enum class VideoOp : uint8_t { kAdd, kSub, kAvrg, kAbsdiff, kMin, kMax, kSet, kShl, kShr, kMad };

// SIMD: element i of a (b) is element SimdSelA(sel, i) (SimdSelB) of the pair {b, a} (a's elements
// first); d's element i is written where SimdMask(sel) has bit i (elsewhere it is c's).
constexpr uint32_t SimdSelA(uint32_t sel, unsigned i) { return sel >> (3 * i) & 7; }
constexpr uint32_t SimdSelB(uint32_t sel, unsigned i) { return sel >> (12 + 3 * i) & 7; }
constexpr uint32_t SimdMask(uint32_t sel) { return sel >> 24 & 15; }
constexpr uint32_t SimdSel(const uint32_t (&a)[4], const uint32_t (&b)[4], uint32_t mask) {
  uint32_t s = mask << 24;
  for (unsigned i = 0; i < 4; ++i) s |= a[i] << (3 * i) | b[i] << (12 + 3 * i);
  return s;
}

// Scalar: a part of a 32-bit operand (kWord: all of it); the secondary operation with c.
enum class VideoPart : uint8_t { kWord, kB0, kB1, kB2, kB3, kH0, kH1 };
enum class VideoOp2 : uint8_t { kNone, kAdd, kMin, kMax };
struct ScalarSel {
  VideoPart a = VideoPart::kWord, b = VideoPart::kWord, d = VideoPart::kWord;  // d: merge into c
  VideoOp2 op2 = VideoOp2::kNone;
  bool a_signed = false, b_signed = false;
  bool wrap = false;                        // vshl/vshr: the shift amount modulo 32 (else clamped to 32)
  uint8_t scale = 0;                        // vmad: 0, 7 or 15 (.shr7, .shr15)
  bool plus_one = false;                    // vmad .po
  bool neg_product = false, neg_c = false;  // vmad: -a*b (one of a, b negated), -c

  constexpr uint32_t Pack() const {
    return static_cast<uint32_t>(a) | static_cast<uint32_t>(b) << 3 | static_cast<uint32_t>(d) << 6 |
           static_cast<uint32_t>(op2) << 9 | uint32_t{a_signed} << 11 | uint32_t{b_signed} << 12 |
           uint32_t{wrap} << 13 | uint32_t{scale} << 14 | uint32_t{plus_one} << 19 | uint32_t{neg_product} << 20 |
           uint32_t{neg_c} << 21;
  }
  static constexpr ScalarSel Unpack(uint32_t v) {
    ScalarSel s;
    s.a = static_cast<VideoPart>(v & 7);
    s.b = static_cast<VideoPart>(v >> 3 & 7);
    s.d = static_cast<VideoPart>(v >> 6 & 7);
    s.op2 = static_cast<VideoOp2>(v >> 9 & 3);
    s.a_signed = v >> 11 & 1;
    s.b_signed = v >> 12 & 1;
    s.wrap = v >> 13 & 1;
    s.scale = static_cast<uint8_t>(v >> 14 & 31);
    s.plus_one = v >> 19 & 1;
    s.neg_product = v >> 20 & 1;
    s.neg_c = v >> 21 & 1;
    return s;
  }
};

constexpr uint32_t kNoSlot = 0xffffffffu;

inline bool IsHalfLike(ptx::Type t) {
  return t == ptx::Type::kF16 || t == ptx::Type::kBF16 || t == ptx::Type::kF16x2 || t == ptx::Type::kBF16x2;
}

struct Inst {
  Op op = Op::kNop;
  ptx::Type t = ptx::Type::kNone;   // the instruction's (destination) type
  ptx::Type t2 = ptx::Type::kNone;  // cvt: source type; mul/mad.wide: source type; set: destination
                                    // type (t: the compared type); slct: c's type
  Mem mem = Mem::kGlobal;
  Round rnd = Round::kDefault;
  uint8_t cmp = 0;      // Cmp for setp and set; AtomOp; ShflMode; VoteMode
  uint8_t bool_op = 0;  // BoolOp for setp and set
  uint8_t vec = 1;      // ld/st vector width; pack/unpack element count
  uint16_t flags = 0;
  uint8_t dst_bits = 0;      // destination register width (sign extension of loads)
  uint32_t guard = kNoSlot;  // predicate slot, or none
  bool guard_negated = false;
  uint32_t d[4] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot};
  uint32_t s[5] = {kNoSlot, kNoSlot, kNoSlot, kNoSlot, kNoSlot};  // s[4]: atom.cas.b128's c (upper half)
  int64_t offset = 0;                                             // address offset; kernel-param offset
  union {                                                         // (no instruction has two of these)
    uint32_t target = 0;                                          // branch target pc, or call-site index
    uint32_t sel;        // video: selectors, masks and modes (SimdSel, ScalarSel)
    int32_t src_offset;  // cp.async: the source address's offset
  };
  uint32_t line = 0;  // PTX line, for faults
};

static_assert(sizeof(Inst) <= 72, "an Inst is the interpreter's working set: keep it small");

struct CallSite {
  uint32_t callee_entry = 0;
  std::vector<uint32_t> arg_slots, param_slots;   // copied caller -> callee at the call
  std::vector<uint32_t> ret_slots, result_slots;  // copied callee -> caller at the return
};

struct KernelEntry {
  std::string name;
  uint32_t entry_pc = 0;
  KernelSignature signature;  // device::SignatureOf its declaration, with the module's static shared memory
};

// Special registers, each a per-warp slot at special_base + index.
enum Special : uint32_t {
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kLaneId,
  kWarpId,
  kNWarpId,
  kLanemaskEq,
  kLanemaskLt,
  kLanemaskLe,
  kLanemaskGt,
  kLanemaskGe,
  kSmId,
  kNSmId,
  kGridId,
  kDynSmem,
  kTotalSmem,
  kSpecialCount,
};

// Over which threads a special register holds one value: the seeds of the uniformity analyses
// (uniformity.h: launch-invariant instructions, CTA-divergent registers), defined once here.
enum class Scope : uint8_t {
  kThread,  // each thread its own (%tid, %laneid, %warpid, the lane masks)
  kCta,     // one per CTA (%ctaid, %smid)
  kLaunch,  // one for the whole launch (the dimensions, %gridid, shared memory sizes)
};
constexpr Scope SpecialScope(uint32_t s) {
  switch (s) {
    case kTidX:
    case kTidY:
    case kTidZ:
    case kLaneId:
    case kWarpId:
    case kLanemaskEq:
    case kLanemaskLt:
    case kLanemaskLe:
    case kLanemaskGt:
    case kLanemaskGe: return Scope::kThread;
    case kCtaidX:
    case kCtaidY:
    case kCtaidZ:
    case kSmId: return Scope::kCta;
    default: return Scope::kLaunch;
  }
}

struct GlobalVariable {
  std::string name;
  uint64_t size = 0;
  uint32_t align = 1;
  std::vector<uint8_t> init;
  uint32_t address_slot = kNoSlot;  // constant slot receiving the variable's device address
};

struct Program {
  std::vector<Inst> code;
  std::vector<CallSite> calls;
  std::vector<KernelEntry> kernels;
  uint32_t register_slots = 0;   // slots [0, register_slots)
  uint32_t special_base = 0;     // [special_base, special_base + kSpecialCount)
  uint32_t const_base = 0;       // [const_base, const_base + consts.size())
  std::vector<uint64_t> consts;  // values of constant slots (global addresses patched at load)
  uint32_t slot_count = 0;
  uint32_t static_shared_bytes = 0;  // all .shared variables of the module
  uint32_t dynamic_shared_offset = 0;
  uint32_t local_bytes = 0;             // per-thread local frame
  std::vector<GlobalVariable> globals;  // .global/.const variables to allocate at load
  size_t max_call_depth = 0;
  // Which values the threads share (uniformity.h), computed once by Decode:
  // per instruction, its result is the same for every thread of every CTA of a launch (computed
  // only from kernel parameters, constants and the launch's shape, into registers nothing else
  // writes): a CTA-wide executor may compute it once per launch;
  std::vector<uint8_t> launch_invariant;
  // per slot, it may hold different values for the threads of one CTA where it is read: a slot
  // marked 0 holds one value for every thread of the CTA wherever a thread reads it.
  std::vector<uint8_t> divergent;

  const KernelEntry* FindKernel(std::string_view name) const;
};

// Decodes a parsed module. Unsupported instructions and forms fail with Unsupported naming the
// instruction and its line.
Result<Program> Decode(const ptx::Module& module);

}  // namespace gpuwasm::device::cpu
