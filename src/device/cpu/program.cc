#include "device/cpu/program.h"

#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "device/cpu/uniformity.h"

namespace gpuwasm::device::cpu {

using ptx::Operand;
using ptx::Type;

const KernelEntry* Program::FindKernel(std::string_view name) const {
  for (const KernelEntry& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

namespace {

Status Unsupported(const ptx::Instruction& in, const std::string& why) {
  return Status::Unsupported("line " + std::to_string(in.pos.line) + ": unsupported instruction '" + in.text() + "'" +
                             (why.empty() ? "" : ": " + why));
}

Status BadAt(const ptx::Instruction& in, const std::string& why) {
  return Status::InvalidArgument("line " + std::to_string(in.pos.line) + ", column " + std::to_string(in.pos.col) +
                                 ": " + in.text() + ": " + why);
}

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool IsVideoScalar(const std::string& op) {
  static const std::set<std::string> kOps = {"vadd", "vsub", "vabsdiff", "vmin", "vmax",
                                             "vshl", "vshr", "vset",     "vmad"};
  return kOps.count(op) != 0;
}

bool IsVideoSimd(const std::string& op) {
  static const std::set<std::string> kOps = {"vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vset2",
                                             "vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4", "vset4"};
  return kOps.count(op) != 0;
}

struct Mods {
  std::vector<Type> types;
  std::string space;  // global shared local param const ""(generic)
  Round rnd = Round::kDefault;
  uint16_t flags = 0;
  bool hi = false, lo = false, wide = false, to = false, uni = false;
  int vec = 1;
  std::string cmp, boolop, atom, mode;
  std::set<std::string> other;
};

Mods ParseMods(const ptx::Instruction& in) {
  Mods m;
  static const std::map<std::string, Round> kRound = {{"rn", Round::kRn},   {"rz", Round::kRz},   {"rm", Round::kRm},
                                                      {"rp", Round::kRp},   {"rni", Round::kRni}, {"rzi", Round::kRzi},
                                                      {"rmi", Round::kRmi}, {"rpi", Round::kRpi}, {"rna", Round::kRna}};
  static const std::set<std::string> kCmp = {"eq", "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
                                             "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  static const std::set<std::string> kAtom = {"add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"};
  for (size_t i = 0; i < in.modifiers.size(); ++i) {
    const std::string& x = in.modifiers[i];
    if (auto t = ptx::ParseType("." + x)) {
      m.types.push_back(*t);
    } else if (x == "global" || x == "shared" || x == "local" || x == "param" || x == "const") {
      m.space = x;
    } else if (auto r = kRound.find(x); r != kRound.end()) {
      m.rnd = r->second;
    } else if (x == "ftz") {
      m.flags |= kFtz;
    } else if (x == "sat") {
      m.flags |= kSat;
    } else if (x == "satfinite") {
      m.flags |= kSatFinite;
    } else if (x == "relu") {
      m.flags |= kRelu;
    } else if (x == "approx" || x == "full") {
      m.flags |= kApprox;
    } else if ((in.opcode == "setp" || in.opcode == "set") && kCmp.count(x) != 0 && m.cmp.empty()) {
      m.cmp = x;  // before .hi/.lo: setp.hi.u32 compares
    } else if (x == "hi") {
      m.hi = true;
    } else if (x == "lo") {
      m.lo = true;
    } else if (x == "wide") {
      m.wide = true;
    } else if (x == "to") {
      m.to = true;
    } else if (x == "uni") {
      m.uni = true;
    } else if (x == "v2" || x == "v4" || ((in.opcode == "atom" || in.opcode == "red") && x == "v8")) {
      m.vec = x == "v2" ? 2 : x == "v4" ? 4 : 8;
    } else if (x == "shiftamt") {
      m.flags |= kShiftAmt;
    } else if (x == "wrap") {
      m.flags |= kWrap;
    } else if (x == "l") {
      m.flags |= kLeft;
    } else if ((in.opcode == "setp" || in.opcode == "set") && (x == "and" || x == "or" || x == "xor")) {
      m.boolop = x;
    } else if ((in.opcode == "atom" || in.opcode == "red") && kAtom.count(x) != 0) {
      m.atom = x;
    } else if ((in.opcode == "shfl" && (x == "up" || x == "down" || x == "bfly" || x == "idx")) ||
               (in.opcode == "vote" && (x == "all" || x == "any" || x == "uni" || x == "ballot"))) {
      m.mode = x;
    } else {
      m.other.insert(x);
    }
  }
  return m;
}

class Decoder {
 public:
  explicit Decoder(const ptx::Module& m) : m_(m) {}

  Result<Program> Run() {
    // Slots: registers, then parameter slots, a sink, specials, then constants.
    // A .b128 register is two slots of its own (low half first); its register slot stays unused.
    uint32_t next = static_cast<uint32_t>(m_.registers.size());
    for (size_t r = 0; r < m_.registers.size(); ++r) {
      if (m_.registers[r].type == Type::kB128) {
        wide_[static_cast<int>(r)] = next;
        next += 2;
      }
    }
    p_.register_slots = next;
    for (size_t fi = 0; fi < m_.functions.size(); ++fi) {
      const ptx::Function& f = m_.functions[fi];
      if (f.is_entry) continue;
      // A parameter or return value takes a slot per 8 bytes (an aggregate such as
      // `.param .align 8 .b8 func_retval0[16]` several).
      for (const auto* list : {&f.params, &f.returns}) {
        for (const ptx::Param& prm : *list) {
          CheckParamSize(prm.size, "function '" + f.name + "'");
          const uint32_t n = ParamSlots(prm.size);
          func_param_slot_[fi][prm.name] = {next, n};
          next += n;
        }
      }
    }
    for (const ptx::Function& f : m_.functions) {
      for (const ptx::Statement& s : f.body) {
        if (s.kind == ptx::Statement::Kind::kVariable && s.var.space == ptx::Space::kParam) {
          param_var_count_ += ParamSlots(s.var.size());
        }
      }
    }
    param_var_base_ = next;
    next += param_var_count_;
    sink_ = next++;
    cc_ = next++;
    p_.special_base = next;
    p_.const_base = next + kSpecialCount;

    GPUWASM_RETURN_IF_ERROR(LayOutModuleVariables());
    // Entry points first, so pcs are known for calls; labels patched per function.
    for (size_t fi = 0; fi < m_.functions.size(); ++fi) {
      if (!m_.functions[fi].has_body) continue;
      GPUWASM_RETURN_IF_ERROR(EmitFunction(static_cast<int>(fi)));
    }
    if (!unsupported_.empty()) {  // every construct the module uses that this device lacks, at once
      const size_t n = unsupported_.size();
      std::string msg = n == 1 ? "" : std::to_string(n) + " unsupported constructs: ";
      for (size_t i = 0; i < std::min<size_t>(n, kListedUnsupported); ++i) msg += (i ? "; " : "") + unsupported_[i];
      if (n > kListedUnsupported) msg += "; and " + std::to_string(n - kListedUnsupported) + " more";
      return Status::Unsupported(msg);
    }
    for (auto& [site, callee] : pending_calls_) {
      auto it = entry_pc_.find(callee);
      if (it == entry_pc_.end())
        return Status::Unsupported("call to '" + m_.functions[callee].name + "', which has no body");
      p_.calls[site].callee_entry = it->second;
    }
    GPUWASM_RETURN_IF_ERROR(CheckCallGraph());
    if (reserved_smem_) {  // the reserved shared memory (cooperative groups' tile barriers) after the static
      const uint64_t base = AlignUp(shared_bytes_, 16);
      shared_bytes_ = base + kReservedSmemBytes;
      for (uint64_t& c : p_.consts) {
        if ((c & ~uint64_t{0xffff}) == kReservedSmemMarker) c = base + (c & 0xffff);
      }
    }
    p_.static_shared_bytes = static_cast<uint32_t>(AlignUp(shared_bytes_, 16));
    p_.dynamic_shared_offset = p_.static_shared_bytes;
    p_.local_bytes = static_cast<uint32_t>(AlignUp(local_bytes_, 8));
    p_.slot_count = p_.const_base + static_cast<uint32_t>(p_.consts.size());
    return std::move(p_);
  }

 private:
  static constexpr size_t kListedUnsupported = 16;

  // Keeps an Unsupported status to report with the others (decoding goes on: a module's author
  // learns everything this device lacks from one load); returns any other error.
  Status Note(Status s) {
    if (s.ok() || s.code() != StatusCode::kUnsupported) return s;
    unsupported_.push_back(s.message());
    return Status::Ok();
  }

  struct Symbol {
    enum Kind { kKernelParam, kSlot, kShared, kLocal, kGlobal, kDynShared } kind;
    uint64_t value = 0;  // offset, or slot
    uint32_t slots = 1;  // kSlot: how many (a call parameter of more than 8 bytes has one per 8)
  };

  // Call parameters are registers of every thread: their size is bounded (as CUDA bounds a
  // function's parameters to 4 KiB); a larger one is reported and given one slot.
  static constexpr uint64_t kMaxCallParamBytes = 4096;
  static uint32_t ParamSlots(uint64_t bytes) {
    return bytes > kMaxCallParamBytes ? 1 : std::max<uint32_t>(1, static_cast<uint32_t>((bytes + 7) / 8));
  }
  void CheckParamSize(uint64_t bytes, const std::string& where) {
    if (bytes > kMaxCallParamBytes) {
      unsupported_.push_back(where + ": a call parameter of " + std::to_string(bytes) + " bytes (at most " +
                             std::to_string(kMaxCallParamBytes) + ")");
    }
  }

  uint32_t Const(uint64_t v) {
    auto it = const_index_.find(v);
    if (it != const_index_.end()) return it->second;
    uint32_t slot = p_.const_base + static_cast<uint32_t>(p_.consts.size());
    p_.consts.push_back(v);
    const_index_[v] = slot;
    return slot;
  }

  Status AddShared(const ptx::Variable& v) {
    if (v.is_extern || (v.is_array && v.count == 0)) {
      symbols_global_[v.name] = {Symbol::kDynShared, 0};
      return Status::Ok();
    }
    shared_bytes_ = AlignUp(shared_bytes_, std::max<uint32_t>(v.align, 1));
    if (shared_bytes_ + v.size() > (1ull << 31)) return Status::InvalidArgument("shared variables exceed 2 GiB");
    (symbols_global_)[v.name] = {Symbol::kShared, shared_bytes_};
    shared_bytes_ += v.size();
    return Status::Ok();
  }

  Status LayOutModuleVariables() {
    for (const ptx::Variable& v : m_.globals) {
      if (v.space == ptx::Space::kShared) {
        GPUWASM_RETURN_IF_ERROR(AddShared(v));
      } else if (v.space == ptx::Space::kGlobal || v.space == ptx::Space::kConst) {
        if (v.is_extern) return Status::Unsupported("extern variable '" + v.name + "' cannot be resolved");
        GlobalVariable g;
        g.name = v.name;
        g.size = std::max<uint64_t>(v.size(), 1);
        g.align = std::max<uint32_t>(v.align, 1);
        g.init = v.init;
        g.address_slot = p_.const_base + static_cast<uint32_t>(p_.consts.size());
        p_.consts.push_back(0);  // patched with the address at load
        symbols_global_[v.name] = {Symbol::kGlobal, g.address_slot};
        p_.globals.push_back(std::move(g));
      } else {
        return Status::Unsupported("module-scope variable '" + v.name + "' in this state space");
      }
    }
    return Status::Ok();
  }

  std::optional<Symbol> Lookup(const std::string& name) const {
    if (auto it = local_symbols_.find(name); it != local_symbols_.end()) return it->second;
    if (auto it = symbols_global_.find(name); it != symbols_global_.end()) return it->second;
    return std::nullopt;
  }

  // The value of a symbol used as an operand (its address).
  Result<uint32_t> SymbolValue(const ptx::Instruction& in, const std::string& name) {
    auto s = Lookup(name);
    if (!s) return BadAt(in, "unknown symbol " + name);
    switch (s->kind) {
      case Symbol::kShared: return Const(s->value);
      case Symbol::kDynShared: return Const(kDynSharedMarker);
      case Symbol::kLocal: return Const(s->value);
      case Symbol::kGlobal: return static_cast<uint32_t>(s->value);
      case Symbol::kKernelParam:
      case Symbol::kSlot: return Unsupported(in, "taking the address of parameter " + name);
    }
    return BadAt(in, "bad symbol");
  }

  // The low slot of a .b128 register operand (the high half is the next slot).
  Result<uint32_t> WideSlot(const ptx::Instruction& in, const Operand& o) {
    auto it = o.kind == Operand::Kind::kRegister ? wide_.find(o.reg) : wide_.end();
    if (it == wide_.end()) return BadAt(in, "a .b128 operand must be a .b128 register");
    return it->second;
  }

  Result<uint32_t> Slot(const ptx::Instruction& in, const Operand& o, Type t) {
    switch (o.kind) {
      case Operand::Kind::kRegister:
        if (wide_.count(o.reg) != 0) return Unsupported(in, "a .b128 register as an operand of this instruction");
        return static_cast<uint32_t>(o.reg);
      case Operand::Kind::kSink: return sink_;
      case Operand::Kind::kImmediate: {
        uint64_t bits = o.imm_bits;
        if (t == Type::kF32 && o.imm_double)
          bits = ptx::F64BitsToF32Bits(bits);
        else if (t == Type::kF64 && o.imm_float)
          bits = ptx::F32BitsToF64Bits(bits);
        return Const(bits);
      }
      case Operand::Kind::kSpecial: {
        static const std::map<std::string, uint32_t> kSpecials = {{"%tid.x", kTidX},
                                                                  {"%tid.y", kTidY},
                                                                  {"%tid.z", kTidZ},
                                                                  {"%ntid.x", kNtidX},
                                                                  {"%ntid.y", kNtidY},
                                                                  {"%ntid.z", kNtidZ},
                                                                  {"%ctaid.x", kCtaidX},
                                                                  {"%ctaid.y", kCtaidY},
                                                                  {"%ctaid.z", kCtaidZ},
                                                                  {"%nctaid.x", kNctaidX},
                                                                  {"%nctaid.y", kNctaidY},
                                                                  {"%nctaid.z", kNctaidZ},
                                                                  {"%laneid", kLaneId},
                                                                  {"%warpid", kWarpId},
                                                                  {"%nwarpid", kNWarpId},
                                                                  {"%lanemask_eq", kLanemaskEq},
                                                                  {"%lanemask_lt", kLanemaskLt},
                                                                  {"%lanemask_le", kLanemaskLe},
                                                                  {"%lanemask_gt", kLanemaskGt},
                                                                  {"%lanemask_ge", kLanemaskGe},
                                                                  {"%smid", kSmId},
                                                                  {"%nsmid", kNSmId},
                                                                  {"%gridid", kGridId},
                                                                  {"%dynamic_smem_size", kDynSmem},
                                                                  {"%total_smem_size", kTotalSmem}};
        auto it = kSpecials.find(o.symbol);
        if (it != kSpecials.end()) return p_.special_base + it->second;
        // A launch runs without clusters: every CTA is a cluster of one (the ISA's implicit
        // cluster), so cluster ids are CTA ids and cluster-relative values are 0 of 1 (and the
        // cluster's shared memory is the CTA's).
        static const std::map<std::string, uint32_t> kClusterAsCta = {
            {"%clusterid.x", kCtaidX},      {"%clusterid.y", kCtaidY},   {"%clusterid.z", kCtaidZ},
            {"%nclusterid.x", kNctaidX},    {"%nclusterid.y", kNctaidY}, {"%nclusterid.z", kNctaidZ},
            {"%aggr_smem_size", kTotalSmem}};
        if (auto c = kClusterAsCta.find(o.symbol); c != kClusterAsCta.end()) return p_.special_base + c->second;
        const std::string base = o.symbol.substr(0, o.symbol.find('.'));
        if (base.rfind("%reserved_smem_offset", 0) == 0) {
          // The region the toolkit's cooperative groups keep their tile barriers in: kReservedSmemBytes
          // of the CTA's shared memory, zeroed at its start like the rest; _0 and _1 two words in it.
          reserved_smem_ = true;
          if (base == "%reserved_smem_offset_cap") return Const(kReservedSmemBytes);
          const uint64_t off = base == "%reserved_smem_offset_end" ? kReservedSmemBytes
                               : base == "%reserved_smem_offset_1" ? 8
                                                                   : 0;
          return Const(kReservedSmemMarker | off);
        }
        if (base == "%cluster_nctaid" || base == "%cluster_nctarank") return Const(1);
        if (base == "%cluster_ctaid" || base == "%cluster_ctarank" || base == "%is_explicit_cluster" ||
            base.rfind("%pm", 0) == 0 || base.rfind("%envreg", 0) == 0 || base == "%current_graph_exec") {
          return Const(0);  // no performance counters, no driver environment registers, no graph
        }
        return Unsupported(in, "special register " + o.symbol);
      }
      case Operand::Kind::kSymbol: return SymbolValue(in, o.symbol);
      default: return BadAt(in, "unexpected operand");
    }
  }

  // Address operand: base slot + offset.
  Status Address(const ptx::Instruction& in, const Operand& o, Inst* out) {
    if (o.kind != Operand::Kind::kAddress) return BadAt(in, "expected an address operand");
    out->offset = o.offset;
    if (o.reg >= 0) {
      out->s[0] = static_cast<uint32_t>(o.reg);
    } else if (!o.symbol.empty()) {
      GPUWASM_ASSIGN_OR_RETURN(out->s[0], SymbolValue(in, o.symbol));
    } else {
      out->s[0] = Const(0);
    }
    return Status::Ok();
  }

  static Mem SpaceOf(const std::string& s) {
    if (s == "shared") return Mem::kShared;
    if (s == "local") return Mem::kLocal;
    if (s == "global" || s == "const") return Mem::kGlobal;
    return Mem::kGeneric;
  }

  Status Emit(Inst inst, const ptx::Instruction& in) {
    inst.line = static_cast<uint32_t>(in.pos.line);
    if (in.guard >= 0) {
      inst.guard = static_cast<uint32_t>(in.guard);
      inst.guard_negated = in.guard_negated;
    }
    p_.code.push_back(inst);
    return Status::Ok();
  }

  Status EmitFunction(int fi) {
    const ptx::Function& f = m_.functions[fi];
    current_function_ = fi;
    local_symbols_.clear();
    for (const ptx::Param& prm : f.params) {
      if (f.is_entry) {
        local_symbols_[prm.name] = {Symbol::kKernelParam, prm.offset};
      } else {
        const auto [slot, n] = func_param_slot_[fi][prm.name];
        local_symbols_[prm.name] = {Symbol::kSlot, slot, n};
      }
    }
    for (const ptx::Param& prm : f.returns) {
      const auto [slot, n] = func_param_slot_[fi][prm.name];
      local_symbols_[prm.name] = {Symbol::kSlot, slot, n};
    }
    entry_pc_[fi] = static_cast<uint32_t>(p_.code.size());
    if (f.is_entry) {
      KernelEntry k;
      k.name = f.name;
      k.entry_pc = entry_pc_[fi];
      k.signature = SignatureOf(f);  // static shared memory is known once every variable is laid out (Decode)
      p_.kernels.push_back(std::move(k));
    }
    std::map<std::string, uint32_t> labels;
    std::vector<std::pair<size_t, std::string>> branches;
    for (const ptx::Statement& s : f.body) {
      if (s.kind == ptx::Statement::Kind::kLabel) {
        labels[s.label] = static_cast<uint32_t>(p_.code.size());
        continue;
      }
      if (s.kind == ptx::Statement::Kind::kVariable) {
        const ptx::Variable& v = s.var;
        if (v.space == ptx::Space::kShared) {
          GPUWASM_RETURN_IF_ERROR(AddShared(v));
        } else if (v.space == ptx::Space::kLocal) {
          local_bytes_ = AlignUp(local_bytes_, std::max<uint32_t>(v.align, 1));
          local_symbols_[v.name] = {Symbol::kLocal, local_bytes_};
          local_bytes_ += v.size();
          if (local_bytes_ > (1u << 20)) return Status::Unsupported("more than 1 MiB of local memory per thread");
        } else if (v.space == ptx::Space::kParam) {
          CheckParamSize(v.size(), "line " + std::to_string(v.pos.line));
          const uint32_t n = ParamSlots(v.size());
          local_symbols_[v.name] = {Symbol::kSlot, param_var_base_ + param_var_used_, n};
          param_var_used_ += n;
        } else {
          GPUWASM_RETURN_IF_ERROR(Note(Status::Unsupported("line " + std::to_string(v.pos.line) +
                                                           ": variable in this state space inside a function")));
        }
        continue;
      }
      const ptx::Instruction& in = s.inst;
      if (in.opcode == "bra") {
        branches.emplace_back(p_.code.size(), in.operands[0].symbol);
      }
      const size_t before = p_.code.size(), refused = unsupported_.size();
      GPUWASM_RETURN_IF_ERROR(Note(Instruction(in)));
      if (unsupported_.size() != refused) {  // a stand-in keeps every later pc where it belongs
        p_.code.resize(before);
        Inst stand_in;
        stand_in.op = Op::kTrap;
        p_.code.push_back(stand_in);
      }
    }
    // A function falls off its end only if the PTX is malformed; end it explicitly.
    Inst end;
    end.op = f.is_entry ? Op::kExit : Op::kRet;
    p_.code.push_back(end);
    for (auto& [pc, label] : branches) {
      auto it = labels.find(label);
      if (it == labels.end()) return Status::InvalidArgument("undefined label " + label);
      p_.code[pc].target = it->second;
    }
    return Status::Ok();
  }

  static Status NeedOperands(const ptx::Instruction& in, size_t n) {
    if (in.operands.size() != n) {
      return BadAt(in, "expected " + std::to_string(n) + " operands, got " + std::to_string(in.operands.size()));
    }
    return Status::Ok();
  }

  // The operand checks every decoder shares: register `i` as the destination (of x's type), and
  // `n` sources from operand `from` into x.s[].
  Result<uint32_t> Dst(const ptx::Instruction& in, const Inst& x, size_t i) {
    const Operand& o = in.operands[i];
    if (o.kind != Operand::Kind::kRegister && o.kind != Operand::Kind::kSink) {
      return BadAt(in, "operand " + std::to_string(i + 1) + " must be a register");
    }
    return Slot(in, o, x.t);
  }
  Status Srcs(const ptx::Instruction& in, Inst& x, size_t from, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      GPUWASM_ASSIGN_OR_RETURN(x.s[k], Slot(in, in.operands[from + k], x.t));
    }
    return Status::Ok();
  }
  // `o` with a destination and `nsrc` sources.
  Status Arith(const ptx::Instruction& in, Inst& x, Op o, size_t nsrc) {
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, nsrc + 1));
    x.op = o;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_RETURN_IF_ERROR(Srcs(in, x, 1, nsrc));
    return Emit(x, in);
  }

  // One instruction: the modifiers every instruction shares, then its opcode's decoder.
  Status Instruction(const ptx::Instruction& in) {
    Mods m = ParseMods(in);
    const std::string& op = in.opcode;
    Inst x;
    x.t = m.types.empty() ? Type::kNone : m.types.back();
    x.rnd = m.rnd;
    x.flags = m.flags;
    if (op != "cvt") {  // only cvt reads these
      if (m.flags & kRelu) return Unsupported(in, "modifier .relu");
      if (m.flags & kSatFinite) return Unsupported(in, "modifier .satfinite");
      if (m.rnd == Round::kRna) return BadAt(in, ".rna rounds conversions to tf32 only");
    }
    // Modifiers outside the types, rounding and the few every instruction may have are read by
    // the instructions' own decoders; any other instruction with one is refused here.
    static const std::set<std::string_view> kTakesModifiers = {
        "mov",  "ld",   "st",   "bar",  "barrier", "membar", "fence", "shfl",  "vote",  "atom", "red",
        "call", "min",  "max",  "cvt",  "div",     "prmt",   "shf",   "ldu",   "testp", "add",  "sub",
        "mad",  "addc", "subc", "madc", "redux",   "match",  "dp2a",  "szext", "bmsk",  "cp"};
    if (!m.other.empty() && !kTakesModifiers.count(op) && !IsVideoSimd(op) && !IsVideoScalar(op)) {
      return Unsupported(in, "modifier ." + *m.other.begin());
    }
    if (std::find(m.types.begin(), m.types.end(), Type::kB128) != m.types.end()) {
      if (op == "mov") return WideMove(in, m, x);
      if (op != "atom" && op != "red" && op != "ld" && op != "st") return Unsupported(in, ".b128 operands of " + op);
    }
    // A .cc on any arithmetic (decoded above only mov, ld, st and cvta) makes it a carry chain.
    const bool cc = m.other.count("cc") != 0 && op != "mov" && op != "ld" && op != "ldu" && op != "st" && op != "cvta";
    if (op == "addc" || op == "subc" || op == "madc" || cc) return DecodeCarryChain(in, m, x);
    if (IsVideoSimd(op)) return VideoSimd(in, m, x);
    if (IsVideoScalar(op)) return VideoScalar(in, m, x);
    // Instructions whose operands are the destination and `n` sources, all of the instruction's type.
    static const std::unordered_map<std::string_view, std::pair<Op, size_t>> kArith = {
        {"fma", {Op::kFma, 3}},   {"div", {Op::kDiv, 2}},          {"rem", {Op::kRem, 2}}, {"abs", {Op::kAbs, 1}},
        {"neg", {Op::kNeg, 1}},   {"and", {Op::kAnd, 2}},          {"or", {Op::kOr, 2}},   {"xor", {Op::kXor, 2}},
        {"not", {Op::kNot, 1}},   {"cnot", {Op::kCnot, 1}},        {"bfe", {Op::kBfe, 3}}, {"bfi", {Op::kBfi, 4}},
        {"lop3", {Op::kLop3, 4}}, {"sqrt", {Op::kSqrt, 1}},        {"rcp", {Op::kRcp, 1}}, {"rsqrt", {Op::kRsqrt, 1}},
        {"sin", {Op::kSin, 1}},   {"cos", {Op::kCos, 1}},          {"ex2", {Op::kEx2, 1}}, {"lg2", {Op::kLg2, 1}},
        {"tanh", {Op::kTanh, 1}}, {"copysign", {Op::kCopysign, 2}}};
    if (auto a = kArith.find(op); a != kArith.end()) return Arith(in, x, a->second.first, a->second.second);
    using Handler = Status (Decoder::*)(const ptx::Instruction&, Mods&, Inst&);
    static const std::unordered_map<std::string_view, Handler> kHandlers = {{"mov", &Decoder::DecodeMov},
                                                                            {"ld", &Decoder::DecodeLoadStore},
                                                                            {"ldu", &Decoder::DecodeLoadStore},
                                                                            {"st", &Decoder::DecodeLoadStore},
                                                                            {"cvta", &Decoder::DecodeCvta},
                                                                            {"add", &Decoder::DecodeAddSub},
                                                                            {"sub", &Decoder::DecodeAddSub},
                                                                            {"dp4a", &Decoder::DecodeDotProduct},
                                                                            {"dp2a", &Decoder::DecodeDotProduct},
                                                                            {"mul", &Decoder::DecodeMulMad},
                                                                            {"mad", &Decoder::DecodeMulMad},
                                                                            {"min", &Decoder::DecodeMinMax},
                                                                            {"max", &Decoder::DecodeMinMax},
                                                                            {"shl", &Decoder::DecodeShift},
                                                                            {"shr", &Decoder::DecodeShift},
                                                                            {"popc", &Decoder::DecodeBitCount},
                                                                            {"clz", &Decoder::DecodeBitCount},
                                                                            {"brev", &Decoder::DecodeBitCount},
                                                                            {"bfind", &Decoder::DecodeBitCount},
                                                                            {"prmt", &Decoder::DecodePrmt},
                                                                            {"shf", &Decoder::DecodeShf},
                                                                            {"setp", &Decoder::DecodeSetp},
                                                                            {"set", &Decoder::DecodeSetp},
                                                                            {"selp", &Decoder::DecodeSelp},
                                                                            {"slct", &Decoder::DecodeSlct},
                                                                            {"mul24", &Decoder::DecodeMul24Mad24},
                                                                            {"mad24", &Decoder::DecodeMul24Mad24},
                                                                            {"sad", &Decoder::DecodeSad},
                                                                            {"szext", &Decoder::DecodeSzextBmsk},
                                                                            {"bmsk", &Decoder::DecodeSzextBmsk},
                                                                            {"fns", &Decoder::DecodeFns},
                                                                            {"testp", &Decoder::DecodeTestp},
                                                                            {"isspacep", &Decoder::DecodeIsspacep},
                                                                            {"cvt", &Decoder::DecodeCvt},
                                                                            {"cp", &Decoder::DecodeCp},
                                                                            {"bra", &Decoder::DecodeBra},
                                                                            {"ret", &Decoder::DecodeRet},
                                                                            {"exit", &Decoder::DecodeExit},
                                                                            {"trap", &Decoder::DecodeTrap},
                                                                            {"brkpt", &Decoder::DecodeTrap},
                                                                            {"membar", &Decoder::DecodeFenceOrHint},
                                                                            {"fence", &Decoder::DecodeFenceOrHint},
                                                                            {"nanosleep", &Decoder::DecodeFenceOrHint},
                                                                            {"prefetch", &Decoder::DecodeFenceOrHint},
                                                                            {"prefetchu", &Decoder::DecodeFenceOrHint},
                                                                            {"bar", &Decoder::DecodeBar},
                                                                            {"barrier", &Decoder::DecodeBar},
                                                                            {"atom", &Decoder::DecodeAtomic},
                                                                            {"red", &Decoder::DecodeAtomic},
                                                                            {"shfl", &Decoder::DecodeShfl},
                                                                            {"vote", &Decoder::DecodeVote},
                                                                            {"redux", &Decoder::DecodeRedux},
                                                                            {"match", &Decoder::DecodeMatch},
                                                                            {"activemask", &Decoder::DecodeActivemask},
                                                                            {"call", &Decoder::DecodeCall}};
    if (auto h = kHandlers.find(op); h != kHandlers.end()) return (this->*h->second)(in, m, x);
    return Unsupported(in, "");
  }

  // mov.
  Status DecodeMov(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    const auto& ops = in.operands;
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 2));
    if (ops[1].kind == Operand::Kind::kSpecial &&
        (ops[1].symbol == "%clock" || ops[1].symbol == "%clock64" || ops[1].symbol == "%clock_hi" ||
         ops[1].symbol.rfind("%globaltimer", 0) == 0)) {
      x.op = Op::kClock;
      x.offset = ops[1].symbol == "%clock_hi" || ops[1].symbol == "%globaltimer_hi" ? 32 : 0;  // shift
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
      return Emit(x, in);
    }
    if (ops[1].kind == Operand::Kind::kVector || ops[0].kind == Operand::Kind::kVector) {
      bool pack = ops[1].kind == Operand::Kind::kVector;
      const Operand& v = pack ? ops[1] : ops[0];
      if (v.elements.size() != 2 && v.elements.size() != 4) return BadAt(in, "vector of 2 or 4 elements expected");
      x.op = pack ? Op::kPack : Op::kUnpack;
      x.vec = static_cast<uint8_t>(v.elements.size());
      Type et = ptx::TypeSize(x.t) / x.vec == 2 ? Type::kB16 : ptx::TypeSize(x.t) / x.vec == 4 ? Type::kB32 : Type::kB8;
      for (size_t k = 0; k < v.elements.size(); ++k) {
        GPUWASM_ASSIGN_OR_RETURN(uint32_t s, Slot(in, v.elements[k], et));
        if (pack)
          x.s[k] = s;
        else
          x.d[k] = s;
      }
      if (pack) {
        GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
      } else {
        GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t));
      }
      return Emit(x, in);
    }
    return Arith(in, x, Op::kMov, 1);
  }

  // ld, ldu, st.
  Status DecodeLoadStore(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    const std::string& op = in.opcode;
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 2));
    bool store = op == "st";
    const Operand& addr = store ? ops[0] : ops[1];
    const Operand& val = store ? ops[1] : ops[0];
    for (const std::string& o : m.other) {
      if (o != "nc" && o != "volatile" && o != "relaxed" && o != "weak" && o != "ca" && o != "cg" && o != "cs" &&
          o != "lu" && o != "cv" && o != "wb" && o != "wt" && o != "gpu" && o != "cta" && o != "sys" &&
          o != "acquire" && o != "release" &&
          o != "cluster" &&  // host loads and stores are ordered enough (x86-64: TSO)
          o.rfind("L1::", 0) != 0 && o.rfind("L2::", 0) != 0) {
        return Unsupported(in, "modifier ." + o);
      }
      if (o == "volatile") x.flags |= kVolatile;
    }
    if (m.space == "param") {
      auto sym = addr.kind == Operand::Kind::kAddress && addr.reg < 0 ? Lookup(addr.symbol) : std::nullopt;
      if (!sym) return Unsupported(in, "parameter access through a register");
      if (sym->kind == Symbol::kKernelParam) {
        if (store) return BadAt(in, "kernel parameters are read-only");
        x.op = Op::kLdKParam;
        // A vector load (ld.param.v2.f32 {a, b}, [p], as nvcc reads a struct) is one load per element.
        GPUWASM_ASSIGN_OR_RETURN(const std::vector<const Operand*> elems, Elements(in, val, m.vec));
        for (size_t k = 0; k < elems.size(); ++k) {
          Inst e = x;
          e.offset = static_cast<int64_t>(sym->value) + addr.offset + static_cast<int64_t>(k * ptx::TypeSize(x.t));
          if (elems[k]->kind != Operand::Kind::kRegister && elems[k]->kind != Operand::Kind::kSink) {
            return BadAt(in, "a parameter load needs register destinations");
          }
          GPUWASM_ASSIGN_OR_RETURN(e.d[0], Slot(in, *elems[k], x.t));
          if (elems[k]->kind == Operand::Kind::kRegister) {
            e.dst_bits = static_cast<uint8_t>(ptx::TypeSize(m_.registers[elems[k]->reg].type) * 8);
          }
          GPUWASM_RETURN_IF_ERROR(Emit(e, in));
        }
        return Status::Ok();
      }
      if (sym->kind != Symbol::kSlot) return Unsupported(in, "call parameter access of this kind");
      return CallParamAccess(in, *sym, addr.offset, store, val, m.vec, x);
    }
    x.op = store ? Op::kSt : Op::kLd;
    x.mem = op == "ldu" ? Mem::kGlobal : SpaceOf(m.space);
    x.vec = static_cast<uint8_t>(m.vec);
    GPUWASM_RETURN_IF_ERROR(Address(in, addr, &x));
    if (x.t == Type::kB128) {  // a 16-byte access of the register's two halves
      if (m.vec != 1 || m.space == "const") return Unsupported(in, "this .b128 form");
      x.t = Type::kB64;
      x.vec = 2;
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], WideSlot(in, val));
      x.d[1] = x.d[0] + 1;
      x.dst_bits = 64;
      return Emit(x, in);
    }
    uint32_t vals[4];
    if (val.kind == Operand::Kind::kVector) {
      if (val.elements.size() != static_cast<size_t>(m.vec))
        return BadAt(in, "vector size does not match ." + std::string(m.vec == 2 ? "v2" : "v4"));
      for (int k = 0; k < m.vec; ++k) {
        GPUWASM_ASSIGN_OR_RETURN(vals[k], Slot(in, val.elements[k], x.t));
      }
    } else {
      if (m.vec != 1) return BadAt(in, "vector access needs a vector operand");
      GPUWASM_ASSIGN_OR_RETURN(vals[0], Slot(in, val, x.t));
    }
    // s[0] is the address; the values (loaded or stored) are d[0..vec).
    for (int k = 0; k < m.vec; ++k) x.d[k] = vals[k];
    if (!store) {
      const Operand& first = val.kind == Operand::Kind::kVector ? val.elements[0] : val;
      x.dst_bits = first.kind == Operand::Kind::kRegister
                       ? static_cast<uint8_t>(ptx::TypeSize(m_.registers[first.reg].type) * 8)
                       : 64;
    }
    return Emit(x, in);
  }

  // cvta.
  Status DecodeCvta(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 2));
    x.op = m.to ? Op::kCvtaTo : Op::kCvta;
    x.mem = SpaceOf(m.space);
    if (x.mem == Mem::kGlobal) x.op = Op::kMov;  // global addresses are generic addresses
    if (m.space.empty()) return BadAt(in, "cvta needs a state space");
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t));
    return Emit(x, in);
  }

  // add, sub.
  Status DecodeAddSub(const ptx::Instruction& in, Mods& m, Inst& x) {
    const std::string& op = in.opcode;
    if (!m.other.empty()) return Unsupported(in, "modifier ." + *m.other.begin());
    return Arith(in, x, op == "add" ? Op::kAdd : Op::kSub, 2);
  }

  // dp4a, dp2a: .atype.btype: a's and b's element types.
  Status DecodeDotProduct(const ptx::Instruction& in, Mods& m, Inst& x) {
    const std::string& op = in.opcode;
    if (m.types.size() != 2) return BadAt(in, op + " needs two types");
    if (!m.other.empty()) return Unsupported(in, "modifier ." + *m.other.begin());
    if (op == "dp2a" && m.hi == m.lo) return BadAt(in, "dp2a needs .lo or .hi");
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 4));
    x.op = op == "dp4a" ? Op::kDp4a : Op::kDp2a;
    x.t = m.types[0];
    x.t2 = m.types[1];
    if (m.hi) x.cmp = 1;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_RETURN_IF_ERROR(Srcs(in, x, 1, 3));
    return Emit(x, in);
  }

  // mul, mad.
  Status DecodeMulMad(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    const std::string& op = in.opcode;
    bool mad = op == "mad";
    if (ptx::IsFloat(x.t)) return Arith(in, x, mad ? Op::kFma : Op::kMulLo, mad ? 3 : 2);
    if (m.wide) {
      x.t2 = x.t;
      x.t = ptx::TypeSize(x.t) == 4 ? (ptx::IsSigned(x.t) ? Type::kS64 : Type::kU64)
                                    : (ptx::IsSigned(x.t) ? Type::kS32 : Type::kU32);
      if (ptx::TypeSize(x.t2) != 2 && ptx::TypeSize(x.t2) != 4) return Unsupported(in, ".wide of this type");
      GPUWASM_RETURN_IF_ERROR(NeedOperands(in, mad ? 4 : 3));
      x.op = mad ? Op::kMadWide : Op::kMulWide;
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
      GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t2));
      GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], x.t2));
      if (mad) {
        GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, ops[3], x.t));
      }
      return Emit(x, in);
    }
    if (m.hi) return Arith(in, x, mad ? Op::kMadHi : Op::kMulHi, mad ? 3 : 2);
    return Arith(in, x, mad ? Op::kMadLo : Op::kMulLo, mad ? 3 : 2);
  }

  // min, max.
  Status DecodeMinMax(const ptx::Instruction& in, Mods& m, Inst& x) {
    const std::string& op = in.opcode;
    for (const std::string& o : m.other) {
      if (o != "NaN" && o != "xorsign") return Unsupported(in, "modifier ." + o);
      if (o == "xorsign") return Unsupported(in, "");
    }
    if (m.other.count("NaN") != 0) x.flags |= kSat;  // reuse: propagate NaN
    return Arith(in, x, op == "min" ? Op::kMin : Op::kMax, 2);
  }

  // shl, shr.
  Status DecodeShift(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    const auto& ops = in.operands;
    const std::string& op = in.opcode;
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 3));
    x.op = op == "shl" ? Op::kShl : Op::kShr;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t));
    GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], Type::kU32));
    return Emit(x, in);
  }

  // popc, clz, brev, bfind.
  Status DecodeBitCount(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    const std::string& op = in.opcode;
    Op o = op == "popc" ? Op::kPopc : op == "clz" ? Op::kClz : op == "brev" ? Op::kBrev : Op::kBfind;
    return Arith(in, x, o, 1);
  }

  // prmt.
  Status DecodePrmt(const ptx::Instruction& in, Mods& m, Inst& x) {
    if (!m.other.empty()) return Unsupported(in, "prmt mode ." + *m.other.begin());
    return Arith(in, x, Op::kPrmt, 3);
  }

  // shf.
  Status DecodeShf(const ptx::Instruction& in, Mods& m, Inst& x) {
    for (const std::string& o : m.other) {
      if (o != "r" && o != "clamp") return Unsupported(in, "modifier ." + o);
    }
    return Arith(in, x, Op::kShf, 3);
  }

  // setp, set: set.cmp[.bool].dtype.stype: d = the predicate as 1.0f or all ones.
  Status DecodeSetp(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    const std::string& op = in.opcode;
    if (ops.size() != 3 && ops.size() != 4) return BadAt(in, op + " needs 3 or 4 operands");
    const bool set = op == "set";
    if (set) {
      if (m.types.size() != 2) return BadAt(in, "set needs a destination and a source type");
      x.t2 = m.types[0];
      if (x.t2 != Type::kU32 && x.t2 != Type::kS32 && x.t2 != Type::kF32)
        return BadAt(in, "set's destination type must be u32, s32 or f32");
      if (ops[0].reg2 >= 0) return BadAt(in, "set has one destination");
    }
    static const std::map<std::string, Cmp> kCmps = {
        {"eq", Cmp::kEq},   {"ne", Cmp::kNe},   {"lt", Cmp::kLt},   {"le", Cmp::kLe},   {"gt", Cmp::kGt},
        {"ge", Cmp::kGe},   {"lo", Cmp::kLo},   {"ls", Cmp::kLs},   {"hi", Cmp::kHi},   {"hs", Cmp::kHs},
        {"equ", Cmp::kEqu}, {"neu", Cmp::kNeu}, {"ltu", Cmp::kLtu}, {"leu", Cmp::kLeu}, {"gtu", Cmp::kGtu},
        {"geu", Cmp::kGeu}, {"num", Cmp::kNum}, {"nan", Cmp::kNan}};
    auto c = kCmps.find(m.cmp);
    if (c == kCmps.end()) return BadAt(in, op + " needs a comparison");
    x.op = set ? Op::kSet : Op::kSetp;
    x.cmp = static_cast<uint8_t>(c->second);
    x.bool_op = static_cast<uint8_t>(m.boolop == "and"   ? BoolOp::kAnd
                                     : m.boolop == "or"  ? BoolOp::kOr
                                     : m.boolop == "xor" ? BoolOp::kXor
                                                         : BoolOp::kNone);
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], set ? x.t2 : Type::kPred));
    if (ops[0].reg2 >= 0) {
      x.d[1] = static_cast<uint32_t>(ops[0].reg2);
      x.flags |= kDualDst;
    }
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t));
    GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], x.t));
    if (ops.size() == 4) {
      if (x.bool_op == static_cast<uint8_t>(BoolOp::kNone)) return BadAt(in, "a 4th operand needs .and/.or/.xor");
      GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, ops[3], Type::kPred));
      x.flags |= kHasPred3;
      if (ops[3].negate) x.flags |= kNegPred3;
    }
    return Emit(x, in);
  }

  // selp.
  Status DecodeSelp(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    const auto& ops = in.operands;
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 4));
    x.op = Op::kSelp;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_RETURN_IF_ERROR(Srcs(in, x, 1, 2));
    GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, ops[3], Type::kPred));
    if (ops[3].negate) x.flags |= kNegPred3;
    return Emit(x, in);
  }

  // slct: slct.dtype.ctype d, a, b, c: a where c >= 0, else b.
  Status DecodeSlct(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    if (m.types.size() != 2 || (m.types[1] != Type::kS32 && m.types[1] != Type::kF32)) {
      return BadAt(in, "slct needs a destination type and c's type, s32 or f32");
    }
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 4));
    x.op = Op::kSlct;
    x.t = m.types[0];
    x.t2 = m.types[1];
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_RETURN_IF_ERROR(Srcs(in, x, 1, 2));
    GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, ops[3], x.t2));
    return Emit(x, in);
  }

  // mul24, mad24: .hi/.lo: bits 47..16 or 31..0 of the 48-bit product.
  Status DecodeMul24Mad24(const ptx::Instruction& in, Mods& m, Inst& x) {
    const std::string& op = in.opcode;
    if (m.hi == m.lo) return BadAt(in, op + " needs .hi or .lo");
    if (x.t != Type::kU32 && x.t != Type::kS32) return BadAt(in, op + " is .u32 or .s32");
    if ((x.flags & kSat) && (op != "mad24" || !m.hi || x.t != Type::kS32))
      return BadAt(in, ".sat is for mad24.hi.s32 only");
    if (m.hi) x.cmp = 1;
    return Arith(in, x, op == "mul24" ? Op::kMul24 : Op::kMad24, op == "mul24" ? 2 : 3);
  }

  // sad.
  Status DecodeSad(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    if (ptx::IsFloat(x.t) || ptx::TypeSize(x.t) < 2) return BadAt(in, "sad needs a 16-, 32- or 64-bit integer type");
    return Arith(in, x, Op::kSad, 3);
  }

  // szext, bmsk: .clamp or .wrap (the flag).
  Status DecodeSzextBmsk(const ptx::Instruction& in, Mods& m, Inst& x) {
    const std::string& op = in.opcode;
    const bool clamp = m.other.count("clamp") != 0;
    if (clamp == ((x.flags & kWrap) != 0) || m.other.size() != (clamp ? 1u : 0u))
      return BadAt(in, op + " needs .clamp or .wrap");
    if (op == "szext" ? (x.t != Type::kU32 && x.t != Type::kS32) : x.t != Type::kB32) {
      return BadAt(in, op == "szext" ? "szext is .u32 or .s32" : "bmsk is .b32");
    }
    return Arith(in, x, op == "szext" ? Op::kSzext : Op::kBmsk, 2);
  }

  // fns: fns.b32 d, mask, base, offset.
  Status DecodeFns(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    const auto& ops = in.operands;
    if (x.t != Type::kB32) return BadAt(in, "fns is .b32");
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 4));
    x.op = Op::kFns;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], Type::kB32));
    GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], Type::kS32));
    GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, ops[3], Type::kS32));
    return Emit(x, in);
  }

  // testp.
  Status DecodeTestp(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    static const std::map<std::string, uint8_t> kTests = {{"finite", 0},     {"infinite", 1}, {"number", 2},
                                                          {"notanumber", 3}, {"normal", 4},   {"subnormal", 5}};
    if (m.other.size() != 1 || kTests.count(*m.other.begin()) == 0) return Unsupported(in, "");
    x.cmp = kTests.at(*m.other.begin());
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 2));
    x.op = Op::kTestp;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], Type::kPred));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t));
    return Emit(x, in);
  }

  // isspacep: whether a generic address is in the space (the fence's slow path).
  Status DecodeIsspacep(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 2));
    if (m.space.empty()) return BadAt(in, "isspacep needs a state space");
    x.op = Op::kIsspacep;
    x.mem = SpaceOf(m.space);
    x.cmp = m.space == "const" || m.space == "param" ? 1 : 0;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], Type::kPred));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], Type::kU64));
    return Emit(x, in);
  }

  // cvt.
  Status DecodeCvt(const ptx::Instruction& in, Mods& m, Inst& x) { return Convert(in, m, x); }

  // cp.
  Status DecodeCp(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) { return CpAsync(in, x); }

  // bra.
  Status DecodeBra(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    x.op = Op::kBra;
    return Emit(x, in);  // target patched by EmitFunction
  }

  // ret.
  Status DecodeRet(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    x.op = m_.functions[current_function_].is_entry ? Op::kExit : Op::kRet;
    return Emit(x, in);
  }

  // exit.
  Status DecodeExit(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    x.op = Op::kExit;
    return Emit(x, in);
  }

  // trap, brkpt.
  Status DecodeTrap(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    x.op = Op::kTrap;
    return Emit(x, in);
  }

  // membar, fence, nanosleep, prefetch, prefetchu.
  Status DecodeFenceOrHint(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    x.op = Op::kNop;
    return Emit(x, in);
  }

  // bar, barrier.
  Status DecodeBar(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    bool warp = m.other.count("warp") != 0;
    if (warp) {
      // bar.warp.sync: the interpreter regroups a warp's lanes wherever they meet again (so
      // they are in lockstep here); native code ends a block at it (native.h).
      x.op = Op::kWarpSync;
      return Emit(x, in);
    }
    if (m.other.count("arrive") != 0 || m.other.count("red") != 0) {
      return Unsupported(in, "only barrier 0 without a thread count is supported");
    }
    if (ops.size() != 1 || ops[0].kind != Operand::Kind::kImmediate || ops[0].imm_bits != 0) {
      return Unsupported(in, "only barrier 0 without a thread count is supported");
    }
    x.op = Op::kBar;
    return Emit(x, in);
  }

  // atom, red.
  Status DecodeAtomic(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    const std::string& op = in.opcode;
    static const std::map<std::string, AtomOp> kAtoms = {
        {"add", AtomOp::kAdd},   {"min", AtomOp::kMin}, {"max", AtomOp::kMax}, {"inc", AtomOp::kInc},
        {"dec", AtomOp::kDec},   {"and", AtomOp::kAnd}, {"or", AtomOp::kOr},   {"xor", AtomOp::kXor},
        {"exch", AtomOp::kExch}, {"cas", AtomOp::kCas}};
    auto a = kAtoms.find(m.atom);
    if (a == kAtoms.end()) return BadAt(in, "atomic operation missing");
    for (const std::string& o : m.other) {
      // Every scope and ordering is kept by the host's atomics (acquire-release, one address space).
      if (o != "relaxed" && o != "gpu" && o != "sys" && o != "cta" && o != "cluster" && o != "acquire" &&
          o != "release" && o != "acq_rel" && o != "noftz") {
        return Unsupported(in, "modifier ." + o);
      }
    }
    const bool min_max = a->second == AtomOp::kMin || a->second == AtomOp::kMax;
    if (IsHalfLike(x.t) && a->second != AtomOp::kAdd && !min_max)
      return BadAt(in, "a half-precision atomic adds, or takes the min or max");
    if (IsHalfLike(x.t) && min_max && m.vec == 1) return BadAt(in, "a half-precision .min/.max atomic is a vector one");
    const bool b16 = x.t == Type::kB16 && (a->second == AtomOp::kCas || a->second == AtomOp::kExch);
    const bool b128 = x.t == Type::kB128;
    if (b128 && (op == "red" || (a->second != AtomOp::kCas && a->second != AtomOp::kExch) || m.vec != 1)) {
      return BadAt(in, "a .b128 atomic is atom.exch or atom.cas");
    }
    if (ptx::TypeSize(x.t) != 4 && ptx::TypeSize(x.t) != 8 && !b16 && !b128 && !IsHalfLike(x.t)) {
      return Unsupported(in, "atomic of this size");
    }
    x.op = Op::kAtom;
    x.cmp = static_cast<uint8_t>(a->second);
    x.mem = SpaceOf(m.space);
    bool red = op == "red";
    size_t base = red ? 0 : 1;
    size_t nvals = a->second == AtomOp::kCas ? 2 : 1;
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, base + 1 + nvals));
    if (b128) {  // d[0..1] the old value's halves; s[1..2] b's, s[3..4] c's (cas)
      GPUWASM_RETURN_IF_ERROR(Address(in, ops[base], &x));
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], WideSlot(in, ops[0]));
      x.d[1] = x.d[0] + 1;
      GPUWASM_ASSIGN_OR_RETURN(x.s[1], WideSlot(in, ops[2]));
      x.s[2] = x.s[1] + 1;
      if (nvals == 2) {
        GPUWASM_ASSIGN_OR_RETURN(x.s[3], WideSlot(in, ops[3]));
        x.s[4] = x.s[3] + 1;
      }
      return Emit(x, in);
    }
    if (m.vec != 1) {
      // Vector atomics (sm_90: atom.global.add.v2.f32 {d0, d1}, [a], {b0, b1}): each element
      // is its own atomic add, as the ISA guarantees no more; one instruction per element.
      // sm_90's half-precision vectors: .v2/.v4/.v8 of .f16/.bf16, .v2/.v4 of .f16x2/.bf16x2, with
      // .add, .min or .max; f32: .add.
      const bool half_vec = IsHalfLike(x.t) && (m.vec <= 4 || ptx::TypeSize(x.t) == 2);
      if (!half_vec && (a->second != AtomOp::kAdd || x.t != Type::kF32)) {
        return Unsupported(in, "vector atomic of this type or operation");
      }
      const Operand& vals = ops[base + 1];
      if (vals.kind != Operand::Kind::kVector || vals.elements.size() != static_cast<size_t>(m.vec) ||
          (!red && (ops[0].kind != Operand::Kind::kVector || ops[0].elements.size() != vals.elements.size()))) {
        return BadAt(in, "a vector atomic needs vector operands of its width");
      }
      GPUWASM_RETURN_IF_ERROR(Address(in, ops[base], &x));
      for (size_t k = 0; k < vals.elements.size(); ++k) {
        Inst e = x;
        e.vec = 1;
        e.offset += static_cast<int64_t>(ptx::TypeSize(x.t) * k);
        e.d[0] = sink_;
        if (!red) {
          GPUWASM_ASSIGN_OR_RETURN(e.d[0], Slot(in, ops[0].elements[k], x.t));
        }
        GPUWASM_ASSIGN_OR_RETURN(e.s[1], Slot(in, vals.elements[k], x.t));
        GPUWASM_RETURN_IF_ERROR(Emit(e, in));
      }
      return Status::Ok();
    }
    x.d[0] = red ? sink_ : 0;
    if (!red) {
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    }
    GPUWASM_RETURN_IF_ERROR(Address(in, ops[base], &x));
    GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[base + 1], x.t));
    if (nvals == 2) {
      GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, ops[base + 2], x.t));
    }
    return Emit(x, in);
  }

  // shfl.
  Status DecodeShfl(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    static const std::map<std::string, ShflMode> kModes = {
        {"up", ShflMode::kUp}, {"down", ShflMode::kDown}, {"bfly", ShflMode::kBfly}, {"idx", ShflMode::kIdx}};
    auto md = kModes.find(m.mode);
    if (md == kModes.end()) return BadAt(in, "shfl needs a mode");
    x.op = Op::kShfl;
    x.cmp = static_cast<uint8_t>(md->second);
    if (ops.size() != 4 && ops.size() != 5) return BadAt(in, "shfl needs 4 or 5 operands");
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    if (ops[0].reg2 >= 0) {
      x.d[1] = static_cast<uint32_t>(ops[0].reg2);
      x.flags |= kDualDst;
    }
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], Type::kB32));
    GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], Type::kB32));
    GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, ops[3], Type::kB32));
    x.s[3] = Const(0xffffffffu);
    if (ops.size() == 5) {
      GPUWASM_ASSIGN_OR_RETURN(x.s[3], Slot(in, ops[4], Type::kB32));
    }
    return Emit(x, in);
  }

  // vote.
  Status DecodeVote(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    static const std::map<std::string, VoteMode> kModes = {
        {"all", VoteMode::kAll}, {"any", VoteMode::kAny}, {"uni", VoteMode::kUni}, {"ballot", VoteMode::kBallot}};
    auto md = kModes.find(m.mode);
    if (md == kModes.end()) return BadAt(in, "vote needs a mode");
    x.op = Op::kVote;
    x.cmp = static_cast<uint8_t>(md->second);
    if (ops.size() != 2 && ops.size() != 3) return BadAt(in, "vote needs 2 or 3 operands");
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], Type::kPred));
    if (ops[1].negate) x.flags |= kNegSrc0;
    x.s[1] = Const(0xffffffffu);
    if (ops.size() == 3) {
      GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], Type::kB32));
    }
    return Emit(x, in);
  }

  // redux: redux.sync.op.type d, a, membermask.
  Status DecodeRedux(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    static const std::map<std::string, ReduxOp> kOps = {{"add", ReduxOp::kAdd}, {"min", ReduxOp::kMin},
                                                        {"max", ReduxOp::kMax}, {"and", ReduxOp::kAnd},
                                                        {"or", ReduxOp::kOr},   {"xor", ReduxOp::kXor}};
    int found = -1;
    for (const std::string& o : m.other) {
      if (auto r = kOps.find(o); r != kOps.end() && found < 0)
        found = static_cast<int>(r->second);
      else if (o != "sync")
        return Unsupported(in, "modifier ." + o);
    }
    if (found < 0) return BadAt(in, "redux needs an operation");
    if (ptx::IsFloat(x.t) || ptx::TypeSize(x.t) != 4) return Unsupported(in, "redux of this type");
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 3));
    x.op = Op::kRedux;
    x.cmp = static_cast<uint8_t>(found);
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t));
    GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], Type::kB32));
    return Emit(x, in);
  }

  // match: match.any.sync.type d, a, membermask; match.all.sync.type d[|p], a, membermask.
  Status DecodeMatch(const ptx::Instruction& in, Mods& m, Inst& x) {
    const auto& ops = in.operands;
    const bool all = m.other.count("all") != 0;
    for (const std::string& o : m.other) {
      if (o != "sync" && o != "any" && o != "all") return Unsupported(in, "modifier ." + o);
    }
    if (all == (m.other.count("any") != 0)) return BadAt(in, "match needs .any or .all");
    if (ptx::TypeSize(x.t) != 4 && ptx::TypeSize(x.t) != 8) return BadAt(in, "match needs .b32 or .b64");
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 3));
    x.op = Op::kMatch;
    x.cmp = all ? 1 : 0;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], Type::kB32));
    if (ops[0].reg2 >= 0) {
      if (!all) return BadAt(in, "only match.all has a predicate destination");
      x.d[1] = static_cast<uint32_t>(ops[0].reg2);
      x.flags |= kDualDst;
    }
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t));
    GPUWASM_ASSIGN_OR_RETURN(x.s[1], Slot(in, ops[2], Type::kB32));
    return Emit(x, in);
  }

  // activemask.
  Status DecodeActivemask(const ptx::Instruction& in, [[maybe_unused]] Mods& m, Inst& x) {
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, 1));
    x.op = Op::kActivemask;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    return Emit(x, in);
  }

  // call.
  Status DecodeCall(const ptx::Instruction& in, [[maybe_unused]] Mods& m, [[maybe_unused]] Inst& x) {
    return EmitCall(in);
  }

  // addc, subc, madc: a carry chain (CC.CF in its own slot).
  Status DecodeCarryChain(const ptx::Instruction& in, Mods& m, Inst& x) {
    const std::string& op = in.opcode;
    const bool cc = m.other.count("cc") != 0;
    for (const std::string& o : m.other) {
      if (o != "cc") return Unsupported(in, "modifier ." + o);
    }
    if (ptx::IsFloat(x.t) || ptx::TypeSize(x.t) < 4) return Unsupported(in, "carry chain of this type");
    const bool mad = op == "mad" || op == "madc";
    if (!mad && op != "add" && op != "sub" && op != "addc" && op != "subc") return Unsupported(in, "modifier .cc");
    if (mad && m.hi == m.lo) return BadAt(in, "mad with carry needs .lo or .hi");
    GPUWASM_RETURN_IF_ERROR(NeedOperands(in, mad ? 4 : 3));
    x.op = mad ? Op::kMadC : (op == "add" || op == "addc") ? Op::kAddC : Op::kSubC;
    if (mad && m.hi) x.cmp = 1;
    if (op == "addc" || op == "subc" || op == "madc") {
      x.flags |= kCarryIn;
      x.s[3] = cc_;
    }
    if (cc) {
      x.flags |= kCarryOut;
      x.d[1] = cc_;
    }
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Dst(in, x, 0));
    GPUWASM_RETURN_IF_ERROR(Srcs(in, x, 1, mad ? 3 : 2));
    return Emit(x, in);
  }

  // The value operands of a .v2/.v4 access (`vec` of them, in a vector operand) or of a scalar one.
  static Result<std::vector<const Operand*>> Elements(const ptx::Instruction& in, const Operand& val, int vec) {
    std::vector<const Operand*> elems;
    if (val.kind == Operand::Kind::kVector) {
      if (val.elements.size() != static_cast<size_t>(vec)) return BadAt(in, "vector size does not match");
      for (const Operand& e : val.elements) elems.push_back(&e);
    } else {
      if (vec != 1) return BadAt(in, "vector access needs a vector operand");
      elems.push_back(&val);
    }
    return elems;
  }

  // cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size | ignore-src}{, policy}: the
  // copy (src-size bytes, zeros to cp-size; none where ignore-src holds) is done when it issues,
  // which the ISA allows (its completion is only promised by the wait), so commit_group,
  // wait_group and wait_all are no-ops. The bulk (TMA) and mbarrier forms are not supported.
  Status CpAsync(const ptx::Instruction& in, Inst x) {
    const auto& mods = in.modifiers;
    const auto& ops = in.operands;
    if (mods.empty() || mods[0] != "async") return Unsupported(in, "");
    if (mods.size() == 2 && (mods[1] == "commit_group" || mods[1] == "wait_all" || mods[1] == "wait_group")) {
      const size_t n = mods[1] == "wait_group" ? 1 : 0;
      if (ops.size() != n || (n == 1 && ops[0].kind != Operand::Kind::kImmediate)) {
        return BadAt(in, n == 1 ? "cp.async.wait_group takes a number" : "expected no operands");
      }
      x.op = Op::kNop;
      return Emit(x, in);
    }
    bool ca = false, cg = false, shared = false, global = false, hint = false;
    for (size_t i = 1; i < mods.size(); ++i) {
      const std::string& o = mods[i];
      if (o == "ca")
        ca = true;
      else if (o == "cg")
        cg = true;
      else if (o == "shared" || o == "shared::cta")
        shared = true;
      else if (o == "global")
        global = true;
      else if (o == "L2::cache_hint")
        hint = true;
      else if (o != "L2::64B" && o != "L2::128B" && o != "L2::256B")
        return Unsupported(in, "modifier ." + o);
    }
    if (ca == cg || !shared || !global) return BadAt(in, "cp.async copies .ca or .cg from .global to .shared");
    if (ops.size() < 3 || ops.size() > 5) return BadAt(in, "expected 3 to 5 operands");
    if (ops[2].kind != Operand::Kind::kImmediate ||
        (ops[2].imm_bits != 4 && ops[2].imm_bits != 8 && ops[2].imm_bits != 16) || (cg && ops[2].imm_bits != 16)) {
      return BadAt(in, "cp-size is 4, 8 or 16 (.cg: 16)");
    }
    x.op = Op::kCpAsync;
    x.cmp = static_cast<uint8_t>(ops[2].imm_bits);
    x.mem = Mem::kShared;
    GPUWASM_RETURN_IF_ERROR(Address(in, ops[0], &x));
    Inst src;
    GPUWASM_RETURN_IF_ERROR(Address(in, ops[1], &src));
    if (src.offset < INT32_MIN || src.offset > INT32_MAX) return Unsupported(in, "a source offset beyond 32 bits");
    x.s[1] = src.s[0];
    x.src_offset = static_cast<int32_t>(src.offset);
    x.s[2] = Const(x.cmp);
    size_t next = 3;
    if (next < ops.size() && !(hint && next + 1 == ops.size())) {  // src-size or ignore-src
      const Operand& o = ops[next++];
      if (o.kind == Operand::Kind::kRegister && m_.registers[o.reg].type == Type::kPred) {
        x.s[3] = static_cast<uint32_t>(o.reg);
        if (o.negate) return Unsupported(in, "a negated ignore-src");
      } else {
        if (o.kind == Operand::Kind::kImmediate && o.imm_bits > x.cmp) return BadAt(in, "src-size exceeds cp-size");
        GPUWASM_ASSIGN_OR_RETURN(x.s[2], Slot(in, o, Type::kU32));
      }
    }
    if (next < ops.size()) {  // the cache policy: a hint only
      if (!hint) return BadAt(in, "a cache policy needs .L2::cache_hint");
      GPUWASM_RETURN_IF_ERROR(Slot(in, ops[next++], Type::kB64).status());
    }
    if (next != ops.size()) return BadAt(in, "too many operands");
    return Emit(x, in);
  }

  // mov.b128: a pair of 64-bit halves in or out, or a copy, as two moves.
  Status WideMove(const ptx::Instruction& in, const Mods& m, Inst x) {
    const auto& ops = in.operands;
    if (ops.size() != 2) return BadAt(in, "expected 2 operands");
    if (m.types.size() != 1 || m.vec != 1) return Unsupported(in, "this .b128 form");
    x.t = Type::kB64;
    x.op = Op::kMov;
    uint32_t d[2], s[2];
    for (int side = 0; side < 2; ++side) {
      const Operand& o = ops[side];
      uint32_t* out = side == 0 ? d : s;
      if (o.kind == Operand::Kind::kVector) {
        if (o.elements.size() != 2) return BadAt(in, "a .b128 pair has 2 elements");
        for (int k = 0; k < 2; ++k) {
          GPUWASM_ASSIGN_OR_RETURN(out[k], Slot(in, o.elements[k], Type::kB64));
        }
      } else {
        GPUWASM_ASSIGN_OR_RETURN(out[0], WideSlot(in, o));
        out[1] = out[0] + 1;
      }
    }
    for (int k = 0; k < 2; ++k) {
      Inst e = x;
      e.d[0] = d[k];
      e.s[0] = s[k];
      GPUWASM_RETURN_IF_ERROR(Emit(e, in));
    }
    return Status::Ok();
  }

  // cvt: between integer and float types; packing (cvt.pack.sat, f32 pairs to f16x2/bf16x2); the
  // narrow float formats (fp8, fp6, fp4 and ue8m0 pairs, tf32). .relu and .satfinite apply to
  // float destinations only.
  Status Convert(const ptx::Instruction& in, const Mods& m, Inst x) {
    const auto& ops = in.operands;
    auto need = [&](size_t n) { return NeedOperands(in, n); };
    auto srcs = [&](size_t n, Type t) -> Status {
      for (size_t k = 0; k < n; ++k) {
        GPUWASM_ASSIGN_OR_RETURN(x.s[k], Slot(in, ops[k + 1], t));
      }
      return Status::Ok();
    };
    if (m.other.count("rs") != 0) return Unsupported(in, "stochastic rounding (.rs)");
    if (m.rnd == Round::kRna && m.other.count("tf32") == 0) return BadAt(in, ".rna rounds conversions to tf32 only");
    static const std::map<std::string, MiniFormat> kMini = {
        {"e4m3x2", MiniFormat::kE4M3}, {"e5m2x2", MiniFormat::kE5M2}, {"e2m1x2", MiniFormat::kE2M1},
        {"e2m3x2", MiniFormat::kE2M3}, {"e3m2x2", MiniFormat::kE3M2}, {"ue8m0x2", MiniFormat::kUE8M0},
        {"tf32", MiniFormat::kTF32}};
    if (m.other.count("pack") != 0) {
      // cvt.pack.sat.{u16,s16}.s32 d, a, b; cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b, c: a
      // and b saturated to the type, a above b in d's low bits, the rest of d from c's low bits.
      static const std::map<std::string, std::pair<uint8_t, bool>> kNarrow = {
          {"u4", {4, false}}, {"s4", {4, true}}, {"u2", {2, false}}, {"s2", {2, true}}};
      std::vector<Type> types = m.types;
      uint8_t bits = 0;
      bool sign = false;
      for (const std::string& o : m.other) {
        if (o == "pack") continue;
        auto it = kNarrow.find(o);
        if (it == kNarrow.end() || bits != 0) return Unsupported(in, "modifier ." + o);
        bits = it->second.first;
        sign = it->second.second;
      }
      if (bits == 0 && !types.empty()) {
        if (types[0] != Type::kU8 && types[0] != Type::kS8 && types[0] != Type::kU16 && types[0] != Type::kS16) {
          return Unsupported(in, "cvt.pack to this type");
        }
        bits = static_cast<uint8_t>(ptx::TypeSize(types[0]) * 8);
        sign = ptx::IsSigned(types[0]);
        types.erase(types.begin());
      }
      const bool with_c = bits < 16;
      if (!(x.flags & kSat) || bits == 0 || types.size() != (with_c ? 2u : 1u) || types[0] != Type::kS32 ||
          (with_c && types[1] != Type::kB32)) {
        return Unsupported(in, "this cvt.pack form");
      }
      GPUWASM_RETURN_IF_ERROR(need(with_c ? 4 : 3));
      x.op = Op::kCvtPack;
      x.t = Type::kS32;
      x.t2 = Type::kS32;
      x.cmp = bits;
      x.bool_op = sign;
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], Type::kB32));
      GPUWASM_RETURN_IF_ERROR(srcs(with_c ? 3 : 2, Type::kB32));
      return Emit(x, in);
    }
    const std::string* mini = nullptr;
    for (const std::string& o : m.other) {
      if (kMini.count(o) != 0 && mini == nullptr)
        mini = &o;
      else
        return Unsupported(in, "modifier ." + o);  // (the x4 formats come with .rs only)
    }
    if (mini != nullptr) return ConvertMini(in, m, *mini, kMini.at(*mini), x);
    if (m.types.size() != 2) return BadAt(in, "cvt needs a destination and a source type");
    const Type dt = m.types[0], st = m.types[1];
    if ((x.flags & (kRelu | kSatFinite)) &&
        !(st == Type::kF32 && (dt == Type::kF16 || dt == Type::kBF16 || dt == Type::kF16x2 || dt == Type::kBF16x2))) {
      return Unsupported(in, ".relu and .satfinite on this conversion");
    }
    if ((x.flags & (kRelu | kSatFinite)) && m.rnd != Round::kRn && m.rnd != Round::kRz) {
      return BadAt(in, ".relu and .satfinite need .rn or .rz");
    }
    if ((dt == Type::kF16x2 || dt == Type::kBF16x2) && st == Type::kF32) {
      // cvt.{rn,rz}.f16x2.f32 d, a, b: a to the upper half, b to the lower.
      if (m.rnd != Round::kRn && m.rnd != Round::kRz) return BadAt(in, "a packing conversion rounds .rn or .rz");
      GPUWASM_RETURN_IF_ERROR(need(3));
      x.op = Op::kCvtPack;
      x.t = dt;
      x.t2 = Type::kF32;
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], dt));
      GPUWASM_RETURN_IF_ERROR(srcs(2, Type::kF32));
      return Emit(x, in);
    }
    GPUWASM_RETURN_IF_ERROR(need(2));
    if (ops[0].kind != Operand::Kind::kRegister && ops[0].kind != Operand::Kind::kSink) {
      return BadAt(in, "operand 1 must be a register");
    }
    x.op = Op::kCvt;
    x.t = dt;
    x.t2 = st;
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], x.t));
    GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], x.t2));
    if (ops[0].kind == Operand::Kind::kRegister) {
      x.dst_bits = static_cast<uint8_t>(ptx::TypeSize(m_.registers[ops[0].reg].type) * 8);
    }
    return Emit(x, in);
  }

  // The narrow float formats: encode (d the format, sources f32 a and b, or packed halves a; tf32
  // from one f32) or decode (d f16x2, or bf16x2 for ue8m0, from the format's pair in a).
  Status ConvertMini(const ptx::Instruction& in, const Mods& m, const std::string& name, MiniFormat f, Inst x) {
    const auto& ops = in.operands;
    const long at = std::find(in.modifiers.begin(), in.modifiers.end(), name) - in.modifiers.begin();
    long type_at = -1;
    for (size_t i = 0; i < in.modifiers.size(); ++i) {
      if (ptx::ParseType("." + in.modifiers[i])) type_at = type_at < 0 ? static_cast<long>(i) : type_at;
    }
    if (m.types.size() != 1) return BadAt(in, "a ." + name + " conversion names one other type");
    const Type other = m.types[0];
    const bool decode = type_at < at;  // cvt.rn.f16x2.e2m1x2: the type is the destination
    const bool ue8m0 = f == MiniFormat::kUE8M0, tf32 = f == MiniFormat::kTF32;
    const Type halves = ue8m0 ? Type::kBF16x2 : Type::kF16x2;
    x.op = Op::kCvtMini;
    x.cmp = static_cast<uint8_t>(f);
    x.t = other;
    x.t2 = other;
    const bool rn = m.rnd == Round::kRn, rz_rp = m.rnd == Round::kRz || m.rnd == Round::kRp;
    if (decode) {
      if (tf32 || other != halves) return BadAt(in, "." + name + " converts to ." + (ue8m0 ? "bf16x2" : "f16x2"));
      if (!rn) return BadAt(in, "a conversion from ." + name + " rounds .rn");
      if (x.flags & kSatFinite) return BadAt(in, "a conversion from ." + name + " takes no .satfinite");
      if (ue8m0 && (x.flags & kRelu)) return BadAt(in, "a conversion from .ue8m0x2 takes no .relu");
      x.bool_op = kMiniToHalves;
      if (ops.size() != 2) return BadAt(in, "expected 2 operands");
      GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], Type::kB32));
      GPUWASM_ASSIGN_OR_RETURN(x.s[0], Slot(in, ops[1], Type::kB16));
      return Emit(x, in);
    }
    if (tf32 ? !(m.rnd == Round::kRna || rn || m.rnd == Round::kRz) : ue8m0 ? !rz_rp : !rn) {
      return BadAt(in, "a conversion to ." + name +
                           (tf32    ? " rounds .rna, .rn or .rz"
                            : ue8m0 ? " rounds .rz or .rp"
                                    : " rounds .rn"));
    }
    if (!tf32 && !ue8m0 && !(x.flags & kSatFinite))
      return Unsupported(in, "a ." + name + " conversion without .satfinite");
    if ((x.flags & kRelu) && (ue8m0 || m.rnd == Round::kRna)) return BadAt(in, ".relu with this conversion");
    const bool pair = other == Type::kF32 && !tf32;
    if (!pair && !tf32) {  // from packed halves: f16x2 to fp8, bf16x2 to ue8m0
      if (other != (ue8m0 ? Type::kBF16x2 : Type::kF16x2) ||
          (f != MiniFormat::kE4M3 && f != MiniFormat::kE5M2 && !ue8m0)) {
        return BadAt(in, "." + name + " from " + std::string(ptx::TypeName(other)));
      }
      x.bool_op = kMiniFromHalves;
    }
    if (tf32 && other != Type::kF32) return BadAt(in, ".tf32 converts from .f32");
    if (ops.size() != (pair ? 3u : 2u)) return BadAt(in, "expected " + std::to_string(pair ? 3 : 2) + " operands");
    GPUWASM_ASSIGN_OR_RETURN(x.d[0], Slot(in, ops[0], Type::kB32));
    for (size_t k = 0; k < (pair ? 2u : 1u); ++k) {
      GPUWASM_ASSIGN_OR_RETURN(x.s[k], Slot(in, ops[k + 1], pair || tf32 ? Type::kF32 : Type::kB32));
    }
    return Emit(x, in);
  }

  // vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2 and their 4-element twins, with selectors on a
  // and b (.h10, .b3210: element i from element digit i of {b, a}) and a mask on d (.h0, .b320).
  Status VideoSimd(const ptx::Instruction& in, const Mods& m, Inst x) {
    static const std::map<std::string, VideoOp> kOps = {
        {"vadd", VideoOp::kAdd}, {"vsub", VideoOp::kSub}, {"vavrg", VideoOp::kAvrg}, {"vabsdiff", VideoOp::kAbsdiff},
        {"vmin", VideoOp::kMin}, {"vmax", VideoOp::kMax}, {"vset", VideoOp::kSet}};
    const std::string& op = in.opcode;
    const VideoOp vop = kOps.at(op.substr(0, op.size() - 1));
    x.op = Op::kVideo;
    x.cmp = static_cast<uint8_t>(vop);
    x.vec = op.back() == '2' ? 2 : 4;
    GPUWASM_RETURN_IF_ERROR(VideoCompare(in, m, vop == VideoOp::kSet, &x));
    const size_t ntypes = vop == VideoOp::kSet ? 2 : 3;
    GPUWASM_RETURN_IF_ERROR(VideoTypes(in, m, ntypes));
    if (m.types[ntypes - 2] != m.types[ntypes - 1]) return Unsupported(in, "a and b of different signedness");
    if ((x.flags & kSat) && (x.flags & kAccumulate)) return BadAt(in, ".sat cannot be used with .add");
    x.t = vop == VideoOp::kSet ? Type::kU32 : m.types[0];
    x.t2 = m.types[ntypes - 1];
    if (in.operands.size() != 4) return BadAt(in, "expected 4 operands");
    const unsigned n = x.vec;
    const char part = n == 2 ? 'h' : 'b';
    // Selects `n` elements of {b, a}, digits from the highest element down; absent: `first`...
    auto select = [&](const Operand& o, uint32_t first, uint32_t(&out)[4]) -> Status {
      for (unsigned i = 0; i < n; ++i) out[i] = first + i;
      if (o.select.empty()) return Status::Ok();
      if (o.select[0] != part || o.select.size() != n + 1) {
        return BadAt(in, "selector ." + o.select + " (" + op + " selects " + std::to_string(n) + " " +
                             (n == 2 ? "halfwords, .hxy" : "bytes, .bxyzw") + ")");
      }
      for (unsigned i = 0; i < n; ++i) {
        out[i] = static_cast<uint32_t>(o.select[n - i] - '0');
        if (out[i] >= 2 * n) return BadAt(in, "selector ." + o.select + " names an element beyond b");
      }
      return Status::Ok();
    };
    uint32_t asel[4] = {}, bsel[4] = {}, mask = (1u << n) - 1;
    GPUWASM_RETURN_IF_ERROR(select(in.operands[1], 0, asel));
    GPUWASM_RETURN_IF_ERROR(select(in.operands[2], n, bsel));
    if (const std::string& dm = in.operands[0].select; !dm.empty()) {  // digits descending, each < n
      mask = 0;
      bool ok = dm[0] == part && dm.size() >= 2;
      for (size_t k = 1; ok && k < dm.size(); ++k) {
        const unsigned e = static_cast<unsigned>(dm[k] - '0');
        ok = e < n && (k == 1 || e < static_cast<unsigned>(dm[k - 1] - '0'));
        mask |= 1u << e;
      }
      if (!ok) return BadAt(in, "mask ." + dm + " (" + op + " masks " + (n == 2 ? ".h0 .h1 .h10)" : "bytes, .b3210)"));
    }
    if (!in.operands[3].select.empty()) return BadAt(in, "c takes no selector");
    x.sel = SimdSel(asel, bsel, mask);
    return VideoOperands(in, 3, &x);
  }

  // vadd vsub vabsdiff vmin vmax vshl vshr vset: d = op(a.asel, b.bsel), saturated to d's type (or
  // its part), then .add/.min/.max with c, or merged into c at d's selector. vmad: d = (+-a*b) +- c
  // (or a*b + c + 1), scaled by .shr7/.shr15, saturated.
  Status VideoScalar(const ptx::Instruction& in, const Mods& m, Inst x) {
    static const std::map<std::string, VideoOp> kOps = {
        {"vadd", VideoOp::kAdd}, {"vsub", VideoOp::kSub}, {"vabsdiff", VideoOp::kAbsdiff},
        {"vmin", VideoOp::kMin}, {"vmax", VideoOp::kMax}, {"vshl", VideoOp::kShl},
        {"vshr", VideoOp::kShr}, {"vset", VideoOp::kSet}, {"vmad", VideoOp::kMad}};
    const VideoOp vop = kOps.at(in.opcode);
    const bool set = vop == VideoOp::kSet, mad = vop == VideoOp::kMad,
               shift = vop == VideoOp::kShl || vop == VideoOp::kShr;
    x.op = Op::kVideoScalar;
    x.cmp = static_cast<uint8_t>(vop);
    ScalarSel sel;
    Mods rest = m;  // what the common checks below leave
    auto take = [&](const char* mod) { return rest.other.erase(mod) != 0; };
    if (shift) {
      const bool clamp = take("clamp"), wrap = (x.flags & kWrap) != 0;
      if (clamp == wrap) return BadAt(in, in.opcode + " needs .clamp or .wrap");
      sel.wrap = wrap;
      x.flags &= static_cast<uint16_t>(~kWrap);
    }
    if (mad) {
      sel.plus_one = take("po");
      if (take("shr7")) sel.scale = 7;
      if (take("shr15")) sel.scale = sel.scale ? 0xff : 15;
      if (sel.scale == 0xff) return BadAt(in, "vmad takes one scale");
    } else {
      if (m.other.count("add") + m.other.count("min") + m.other.count("max") > 1) {
        return BadAt(in, "one secondary operation (.add, .min or .max)");
      }
      if (take("add")) sel.op2 = VideoOp2::kAdd;
      if (take("min")) sel.op2 = VideoOp2::kMin;
      if (take("max")) sel.op2 = VideoOp2::kMax;
    }
    GPUWASM_RETURN_IF_ERROR(VideoCompare(in, rest, set, &x));
    const size_t ntypes = set ? 2 : 3;
    GPUWASM_RETURN_IF_ERROR(VideoTypes(in, m, ntypes));
    if (shift && m.types[2] != Type::kU32) return BadAt(in, in.opcode + " shifts by a .u32 amount");
    x.t = set ? Type::kU32 : m.types[0];
    sel.a_signed = ptx::IsSigned(m.types[ntypes - 2]);
    sel.b_signed = ptx::IsSigned(m.types[ntypes - 1]);
    const auto& ops = in.operands;
    const bool has_c = ops.size() == 4;
    if (ops.size() != 3 && !has_c) return BadAt(in, "expected 3 or 4 operands");
    auto part = [&](const Operand& o, VideoPart* p) -> Status {
      static const std::map<std::string, VideoPart> kParts = {{"b0", VideoPart::kB0}, {"b1", VideoPart::kB1},
                                                              {"b2", VideoPart::kB2}, {"b3", VideoPart::kB3},
                                                              {"h0", VideoPart::kH0}, {"h1", VideoPart::kH1}};
      if (o.select.empty()) return Status::Ok();
      auto it = kParts.find(o.select);
      if (it == kParts.end()) return BadAt(in, "selector ." + o.select + " (scalar video selects .b0-.b3, .h0, .h1)");
      *p = it->second;
      return Status::Ok();
    };
    GPUWASM_RETURN_IF_ERROR(part(ops[0], &sel.d));
    GPUWASM_RETURN_IF_ERROR(part(ops[1], &sel.a));
    GPUWASM_RETURN_IF_ERROR(part(ops[2], &sel.b));
    if (has_c && !ops[3].select.empty()) return BadAt(in, "c takes no selector");
    if (mad) {
      if (sel.d != VideoPart::kWord) return BadAt(in, "vmad has no destination selector");
      if (!has_c) return BadAt(in, "vmad needs c");
      sel.neg_product = ops[1].minus != ops[2].minus;
      sel.neg_c = ops[3].minus;
      if (sel.plus_one && (ops[1].minus || ops[2].minus || ops[3].minus)) {
        return BadAt(in, "vmad.po negates no operand");
      }
      if (sel.neg_product && sel.neg_c) return BadAt(in, "vmad negates the product or c, not both");
    } else {
      const bool merge = sel.d != VideoPart::kWord;
      if (merge && sel.op2 != VideoOp2::kNone) return BadAt(in, "a destination selector and a secondary operation");
      // c without either merges the whole word: d is the result (ptxas accepts the form).
      if (!has_c && (merge || sel.op2 != VideoOp2::kNone)) return BadAt(in, "missing operand c");
    }
    x.sel = sel.Pack();
    return VideoOperands(in, has_c ? 3 : 2, &x);
  }

  // vset's comparison and SIMD's .add; anything else left in m.other is unsupported.
  Status VideoCompare(const ptx::Instruction& in, const Mods& m, bool set, Inst* x) {
    static const std::map<std::string, Cmp> kCmps = {{"eq", Cmp::kEq}, {"ne", Cmp::kNe}, {"lt", Cmp::kLt},
                                                     {"le", Cmp::kLe}, {"gt", Cmp::kGt}, {"ge", Cmp::kGe}};
    bool compared = false;
    for (const std::string& o : m.other) {
      if (o == "add" && x->op == Op::kVideo) {
        x->flags |= kAccumulate;
      } else if (auto c = kCmps.find(o); set && c != kCmps.end() && !compared) {
        x->bool_op = static_cast<uint8_t>(c->second);
        compared = true;
      } else {
        return Unsupported(in, "modifier ." + o);
      }
    }
    if (set && !compared) return BadAt(in, "vset needs a comparison");
    return Status::Ok();
  }

  Status VideoTypes(const ptx::Instruction& in, const Mods& m, size_t ntypes) {
    if (m.types.size() != ntypes) return BadAt(in, "expected " + std::to_string(ntypes) + " types");
    for (Type t : m.types) {
      if (t != Type::kU32 && t != Type::kS32) return BadAt(in, "video types are .u32 or .s32");
    }
    return Status::Ok();
  }

  Status VideoOperands(const ptx::Instruction& in, size_t nsrc, Inst* x) {
    for (const Operand& o : in.operands) {
      if (o.kind != Operand::Kind::kRegister && o.kind != Operand::Kind::kImmediate) {
        return BadAt(in, "video operands are registers or numbers");
      }
    }
    GPUWASM_ASSIGN_OR_RETURN(x->d[0], Slot(in, in.operands[0], Type::kB32));
    for (size_t k = 0; k < nsrc; ++k) {
      GPUWASM_ASSIGN_OR_RETURN(x->s[k], Slot(in, in.operands[k + 1], Type::kB32));
    }
    return Emit(*x, in);
  }

  // ld/st.param of a call parameter (a slot per 8 bytes). A whole slot, or the only one at offset 0,
  // moves; a part of an aggregate's slot is a bit-field extract or insert. Each element of a
  // vector access is one instruction.
  Status CallParamAccess(const ptx::Instruction& in, const Symbol& sym, int64_t offset, bool store, const Operand& val,
                         int vec, Inst x) {
    const uint32_t size = ptx::TypeSize(x.t);
    GPUWASM_ASSIGN_OR_RETURN(const std::vector<const Operand*> elems, Elements(in, val, vec));
    for (size_t k = 0; k < elems.size(); ++k) {
      const int64_t off = offset + static_cast<int64_t>(k * size);
      if (off < 0 || static_cast<uint64_t>(off) + size > uint64_t{sym.slots} * 8) {
        return BadAt(in, "access outside the parameter");
      }
      const uint32_t sub = static_cast<uint32_t>(off % 8), slot = static_cast<uint32_t>(sym.value + off / 8);
      if (sub + size > 8) return Unsupported(in, "call parameter access across an 8-byte boundary");
      GPUWASM_ASSIGN_OR_RETURN(uint32_t reg, Slot(in, *elems[k], x.t));
      Inst e = x;
      if (sub == 0 && (size == 8 || sym.slots == 1)) {
        e.op = Op::kMov;
        e.d[0] = store ? slot : reg;
        e.s[0] = store ? reg : slot;
      } else if (store) {  // bfi.b64 slot, value, slot, 8*sub, 8*size
        e.op = Op::kBfi;
        e.t = Type::kB64;
        e.d[0] = slot;
        e.s[0] = reg;
        e.s[1] = slot;
        e.s[2] = Const(sub * 8);
        e.s[3] = Const(size * 8);
      } else {  // bfe.{u64,s64} value, slot, 8*sub, 8*size
        e.op = Op::kBfe;
        e.t = ptx::IsSigned(x.t) ? Type::kS64 : Type::kU64;
        e.d[0] = reg;
        e.s[0] = slot;
        e.s[1] = Const(sub * 8);
        e.s[2] = Const(size * 8);
      }
      GPUWASM_RETURN_IF_ERROR(Emit(e, in));
    }
    return Status::Ok();
  }

  Status EmitCall(const ptx::Instruction& in) {
    const Operand* ret = nullptr;
    const Operand* args = nullptr;
    const Operand* callee = nullptr;
    for (const Operand& o : in.operands) {
      if (o.kind == Operand::Kind::kSymbol)
        callee = &o;
      else if (o.kind == Operand::Kind::kVector && callee == nullptr)
        ret = &o;
      else if (o.kind == Operand::Kind::kVector)
        args = &o;
      else
        return Unsupported(in, "indirect calls");
    }
    if (callee == nullptr) return BadAt(in, "call without a target");
    int fi = -1;
    for (size_t k = 0; k < m_.functions.size(); ++k) {
      if (m_.functions[k].name == callee->symbol) fi = static_cast<int>(k);
    }
    if (fi < 0 || m_.functions[fi].is_entry) return BadAt(in, "call target " + callee->symbol + " is not a .func");
    const ptx::Function& f = m_.functions[fi];
    CallSite cs;
    size_t nargs = args ? args->elements.size() : 0, nret = ret ? ret->elements.size() : 0;
    if (nargs != f.params.size() || nret != f.returns.size()) {
      return BadAt(in, "call to " + f.name + " passes " + std::to_string(nargs) + " arguments and " +
                           std::to_string(nret) + " results; it takes " + std::to_string(f.params.size()) + " and " +
                           std::to_string(f.returns.size()));
    }
    for (size_t k = 0; k < nargs; ++k) {
      auto s = args->elements[k].kind == Operand::Kind::kSymbol ? Lookup(args->elements[k].symbol) : std::nullopt;
      const auto [param, n] = func_param_slot_[fi][f.params[k].name];
      if (s && s->kind == Symbol::kSlot) {
        if (s->slots != n)
          return BadAt(in, "argument " + std::to_string(k + 1) + " differs in size from the parameter");
        for (uint32_t j = 0; j < n; ++j) {
          cs.arg_slots.push_back(static_cast<uint32_t>(s->value) + j);
          cs.param_slots.push_back(param + j);
        }
        continue;
      }
      if (n != 1) return BadAt(in, "argument " + std::to_string(k + 1) + " must be a .param variable");
      GPUWASM_ASSIGN_OR_RETURN(uint32_t slot, Slot(in, args->elements[k], f.params[k].type));
      cs.arg_slots.push_back(slot);
      cs.param_slots.push_back(param);
    }
    for (size_t k = 0; k < nret; ++k) {
      auto s = ret->elements[k].kind == Operand::Kind::kSymbol ? Lookup(ret->elements[k].symbol) : std::nullopt;
      if (!s || s->kind != Symbol::kSlot) return BadAt(in, "call results must be .param variables");
      const auto [ret_slot, n] = func_param_slot_[fi][f.returns[k].name];
      if (s->slots != n) return BadAt(in, "result " + std::to_string(k + 1) + " differs in size from the return value");
      for (uint32_t j = 0; j < n; ++j) {
        cs.result_slots.push_back(static_cast<uint32_t>(s->value) + j);
        cs.ret_slots.push_back(ret_slot + j);
      }
    }
    Inst x;
    x.op = Op::kCall;
    x.target = static_cast<uint32_t>(p_.calls.size());
    pending_calls_.emplace_back(p_.calls.size(), fi);
    callees_[current_function_].insert(fi);
    p_.calls.push_back(std::move(cs));
    return Emit(x, in);
  }

  Status CheckCallGraph() {
    // Every function's registers live in one slot space, so a function may not be re-entered.
    std::map<int, int> state;  // 0 new, 1 on stack, 2 done
    std::map<int, size_t> depth;
    std::function<Status(int)> visit = [&](int f) -> Status {
      state[f] = 1;
      size_t d = 0;
      for (int g : callees_[f]) {
        if (state[g] == 1)
          return Status::Unsupported("recursive call to '" + m_.functions[g].name +
                                     "' is not supported by the CPU device");
        if (state[g] == 0) GPUWASM_RETURN_IF_ERROR(visit(g));
        d = std::max(d, depth[g] + 1);
      }
      depth[f] = d;
      state[f] = 2;
      return Status::Ok();
    };
    for (size_t f = 0; f < m_.functions.size(); ++f) {
      if (state[static_cast<int>(f)] == 0) GPUWASM_RETURN_IF_ERROR(visit(static_cast<int>(f)));
      p_.max_call_depth = std::max(p_.max_call_depth, depth[static_cast<int>(f)]);
    }
    return Status::Ok();
  }

 public:
  // Marker constant for the dynamic shared base; rewritten when the layout is final.
  static constexpr uint64_t kDynSharedMarker = 0xd15a5aedd15a5aedull;
  // Placeholders of reserved-shared-memory offsets (marker | offset), patched once the static
  // shared layout is known.
  static constexpr uint64_t kReservedSmemMarker = 0x5e5e5e5e5e5e0000ull;
  static constexpr uint64_t kReservedSmemBytes = 64;

 private:
  const ptx::Module& m_;
  Program p_;
  std::map<int, std::map<std::string, std::pair<uint32_t, uint32_t>>> func_param_slot_;  // first slot, count
  uint32_t param_var_base_ = 0, param_var_count_ = 0, param_var_used_ = 0;
  uint32_t sink_ = 0;
  std::unordered_map<int, uint32_t> wide_;  // .b128 register -> its low slot
  std::unordered_map<uint64_t, uint32_t> const_index_;
  std::map<std::string, Symbol> symbols_global_;
  std::map<std::string, Symbol> local_symbols_;
  uint64_t shared_bytes_ = 0, local_bytes_ = 0;
  std::map<int, uint32_t> entry_pc_;
  std::vector<std::pair<size_t, int>> pending_calls_;
  std::vector<std::string> unsupported_;  // Note()
  uint32_t cc_ = 0;                       // the carry flag CC.CF of add.cc/addc and family, a register of its own
  bool reserved_smem_ = false;            // a %reserved_smem_offset_* is read: the region is laid out
  std::map<int, std::set<int>> callees_;
  int current_function_ = -1;
};

}  // namespace

Result<Program> Decode(const ptx::Module& module) {
  Decoder d(module);
  GPUWASM_ASSIGN_OR_RETURN(Program p, d.Run());
  p.launch_invariant = LaunchInvariant(p);
  p.divergent = CtaDivergent(p);
  for (KernelEntry& k : p.kernels) k.signature.static_shared_bytes = p.static_shared_bytes;
  // The dynamic shared base is only known once all static shared variables are laid out.
  for (uint64_t& c : p.consts) {
    if (c == Decoder::kDynSharedMarker) c = p.dynamic_shared_offset;
  }
  return p;
}

}  // namespace gpuwasm::device::cpu
