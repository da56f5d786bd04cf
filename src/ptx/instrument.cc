#include "ptx/instrument.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <set>

#include "common/names.h"

namespace gpuwasm::ptx {
namespace {

constexpr const char* kSharedContext = "__gw_ctx";  // entry -> device functions: base, size, control

bool Reserved(const std::string& name) {
  return name.rfind("__gw_", 0) == 0 || name.rfind("%__gw_", 0) == 0 || name.rfind("$__gw_", 0) == 0;
}

bool HasModifier(const Instruction& in, std::string_view m) {
  return std::find(in.modifiers.begin(), in.modifiers.end(), m) != in.modifiers.end();
}

// Why an instruction may not run in a tenant's kernel ("" when it may).
std::string Refusal(const Instruction& in) {
  const std::string& op = in.opcode;
  if (op == "brkpt") return "a breakpoint stops the whole device";
  if (op == "pmevent") return "performance-monitor events belong to the operator";
  if (op == "discard") return "discarded cache lines may be another instance's data";
  if (op == "st.async" || op == "red.async" || op == "multimem" || op == "tensormap" || op == "tcgen05" ||
      op == "clusterlaunchcontrol") {
    return "it reaches memory the fence does not cover";
  }
  if (op == "cp" && (HasModifier(in, "bulk") || in.modifiers.empty() || in.modifiers[0] != "async")) {
    return "bulk and tensor copies reach memory the fence does not cover";
  }
  const bool copies = !in.operands.empty() && in.operands[0].kind == Operand::Kind::kAddress;  // not wait/commit
  if (op == "cp" && copies && (in.operands.size() < 3 || in.operands[2].kind != Operand::Kind::kImmediate)) {
    return "the copy's size must be a constant";
  }
  if (op == "suld" || op == "sust" || op == "sured" || op == "suq" || op == "tex" || op == "tld4" || op == "txq") {
    return "textures and surfaces are not available to tenants";
  }
  return "";
}

// The state space an access instruction names: "global", "generic" (none named), or another
// ("shared", "local", "param", "const": not fenced).
std::string AccessSpace(const Instruction& in) {
  for (const std::string& m : in.modifiers) {
    if (m == "global") return "global";
    for (const char* s : {"shared", "local", "param", "const"}) {
      if (m.rfind(s, 0) == 0) return s;
    }
  }
  return "generic";
}

uint32_t AccessBytes(const Instruction& in) {
  unsigned size = 0, vec = 1;
  for (const std::string& m : in.modifiers) {
    if (auto t = ParseType("." + m)) size = TypeSize(*t);
    if (m == "v2") vec = 2;
    if (m == "v4") vec = 4;
    if (m == "v8") vec = 8;
  }
  return size * vec;
}

class Instrumenter {
 public:
  Instrumenter(const Module& m, const InstrumentOptions& o) : m_(m), o_(o) {}

  Result<Module> Run() {
    GPUWASM_RETURN_IF_ERROR(CheckNames());
    GPUWASM_RETURN_IF_ERROR(CheckRefusals());
    FindPointedTo();
    bool funcs = false;
    for (const Function& f : m_.functions) funcs |= !f.is_entry && f.has_body;
    if (funcs) {
      Variable ctx;
      ctx.name = kSharedContext;
      ctx.space = Space::kShared;
      ctx.type = Type::kB8;
      ctx.align = 8;
      ctx.count = kHiddenParamBytes;
      ctx.is_array = true;
      m_.globals.push_back(ctx);
      shared_context_ = true;
    }
    for (size_t fi = 0; fi < m_.functions.size() && !too_large_; ++fi) {
      if (m_.functions[fi].has_body) Rewrite(static_cast<int>(fi));
    }
    if (too_large_) {
      return Status::ResourceExhausted("the instrumented module would have more than " +
                                       std::to_string(kMaxInstrumentedStatements) + " statements");
    }
    for (Function& f : m_.functions) {
      if (!f.is_entry) continue;
      uint64_t offset = (f.param_bytes + 7) / 8 * 8;
      for (const char* name : kHiddenParams) {
        Param p;
        p.name = name;
        p.type = Type::kU64;
        p.align = 8;
        p.size = 8;
        p.offset = offset;
        offset += 8;
        f.params.push_back(p);
      }
      f.param_bytes = offset;
    }
    return std::move(m_);
  }

 private:
  Status CheckNames() const {
    auto bad = [](const std::string& n) {
      return Status::InvalidArgument("the name " + n + " is reserved for the host's instrumentation (__gw_)");
    };
    for (const Variable& v : m_.globals) {
      if (Reserved(v.name)) return bad(v.name);
    }
    for (const Register& r : m_.registers) {
      if (Reserved(r.name)) return bad(r.name);
    }
    for (const Function& f : m_.functions) {
      if (Reserved(f.name)) return bad(f.name);
      for (const Param& p : f.params) {
        if (Reserved(p.name)) return bad(p.name);
      }
      for (const Statement& s : f.body) {
        if ((s.kind == Statement::Kind::kLabel && Reserved(s.label)) ||
            (s.kind == Statement::Kind::kVariable && Reserved(s.var.name))) {
          return bad(s.kind == Statement::Kind::kLabel ? s.label : s.var.name);
        }
      }
    }
    return Status::Ok();
  }

  // The module variables whose address is taken (a symbol operand, not only [var+off]): the
  // only ones a pointer can point into, so the only ones the slow path lets through.
  void FindPointedTo() {
    std::set<std::string> taken;
    auto visit = [&](const Operand& o, auto& self) -> void {
      if (o.kind == Operand::Kind::kSymbol) taken.insert(o.symbol);
      for (const Operand& e : o.elements) self(e, self);
    };
    for (const Function& f : m_.functions) {
      for (const Statement& s : f.body) {
        if (s.kind != Statement::Kind::kInstruction) continue;
        for (const Operand& o : s.inst.operands) visit(o, visit);
      }
    }
    for (const Variable& v : m_.globals) {
      const bool reachable = v.space == Space::kGlobal || v.space == Space::kConst;
      if (reachable && !v.is_extern && taken.count(v.name) != 0)
        pointed_to_.push_back(static_cast<size_t>(&v - m_.globals.data()));
    }
  }

  Status CheckRefusals() const {
    std::string all;
    int n = 0;
    for (const Function& f : m_.functions) {
      for (const Statement& s : f.body) {
        if (s.kind != Statement::Kind::kInstruction) continue;
        std::string why = Refusal(s.inst);
        if (why.empty()) continue;
        if (n++ < 8) {
          all += (all.empty() ? "" : "; ") + std::string("line ") + std::to_string(s.inst.pos.line) + ": '" +
                 s.inst.text() + "' is not allowed in a tenant's kernel: " + why;
        }
      }
    }
    if (n > 8) all += "; and " + std::to_string(n - 8) + " more";
    return n == 0 ? Status::Ok() : Status::Unsupported(all);
  }

  // --- building blocks -------------------------------------------------------------------------

  int NewReg(std::string name, Type t) {
    int r = static_cast<int>(m_.registers.size());
    m_.registers.push_back({std::move(name), t, fi_});
    new_regs_.push_back(r);
    return r;
  }
  static Operand R(int reg, bool negate = false) {
    Operand o;
    o.kind = Operand::Kind::kRegister;
    o.reg = reg;
    o.negate = negate;
    return o;
  }
  static Operand Imm(uint64_t v) {
    Operand o;
    o.kind = Operand::Kind::kImmediate;
    o.imm_bits = v;
    return o;
  }
  static Operand Sym(const std::string& s) {
    Operand o;
    o.kind = Operand::Kind::kSymbol;
    o.symbol = s;
    return o;
  }
  static Operand Addr(int reg, int64_t off) {
    Operand o;
    o.kind = Operand::Kind::kAddress;
    o.reg = reg;
    o.offset = off;
    return o;
  }
  static Operand AddrSym(const std::string& s, int64_t off) {
    Operand o;
    o.kind = Operand::Kind::kAddress;
    o.symbol = s;
    o.offset = off;
    return o;
  }
  void Emit(std::vector<Statement>* out, const std::string& op, std::vector<std::string> mods, std::vector<Operand> ops,
            int guard = -1, bool guard_negated = false) {
    Statement s;
    s.kind = Statement::Kind::kInstruction;
    s.scope = scope_;
    s.inst.opcode = op;
    s.inst.modifiers = std::move(mods);
    s.inst.operands = std::move(ops);
    s.inst.guard = guard;
    s.inst.guard_negated = guard_negated;
    s.inst.pos = pos_;
    for (Operand& o : s.inst.operands) o.pos = pos_;
    out->push_back(std::move(s));
    too_large_ |= ++emitted_ > kMaxInstrumentedStatements;
  }
  void Label(std::vector<Statement>* out, const std::string& name) {
    Statement s;
    s.kind = Statement::Kind::kLabel;
    s.label = name;
    s.scope = scope_;
    s.inst.pos = pos_;
    out->push_back(std::move(s));
  }

  void AbortCheck(std::vector<Statement>* out) {
    Emit(out, "ld", {"volatile", "global", "u32"}, {R(word_), Addr(control_, 0)});
    Emit(out, "setp", {"ne", "u32"}, {R(pred_), R(word_), Imm(0)});
    Emit(out, "bra", {}, {Sym("$__gw_abort")}, pred_);
    used_abort_ = true;
  }

  int Limit(uint32_t bytes) {
    auto it = limits_.find(bytes);
    return it == limits_.end() ? -1 : it->second;
  }

  // The fast check before an access at `addr` of `bytes` bytes in `space` ("global" or
  // "generic"), guarded like the access; its slow path goes to the stubs.
  void Fence(std::vector<Statement>* out, const Instruction& in, const Operand& addr, uint32_t bytes, bool store,
             const std::string& space) {
    if (addr.reg < 0 && !addr.symbol.empty()) {  // [var+off]: inside one of the module's variables?
      const Variable* v = m_.FindGlobal(addr.symbol);
      const bool fits_space =
          v != nullptr && (v->space == Space::kGlobal || (space == "generic" && v->space == Space::kConst));
      if (fits_space && !v->is_extern && addr.offset >= 0 && static_cast<uint64_t>(addr.offset) <= v->size() &&
          bytes <= v->size() - static_cast<uint64_t>(addr.offset)) {
        return;  // statically in bounds
      }
    }
    int a = addr.reg;
    const unsigned reg_bytes = addr.reg >= 0 ? TypeSize(m_.registers[static_cast<size_t>(addr.reg)].type) : 8;
    if (addr.reg >= 0 && reg_bytes != 8) {  // a narrower address register: zero-extended, as the device does
      a = addr_;
      Emit(out, "cvt", {"u64", reg_bytes == 4 ? "u32" : reg_bytes == 2 ? "u16" : "u8"}, {R(addr_), R(addr.reg)});
      if (addr.offset != 0) Emit(out, "add", {"s64"}, {R(addr_), R(addr_), Imm(static_cast<uint64_t>(addr.offset))});
    } else if (addr.reg < 0 || addr.offset != 0) {
      a = addr_;
      if (addr.reg >= 0) {
        Emit(out, "add", {"s64"}, {R(addr_), R(addr.reg), Imm(static_cast<uint64_t>(addr.offset))});
      } else if (!addr.symbol.empty()) {
        Emit(out, "mov", {"u64"}, {R(addr_), Sym(addr.symbol)});
        if (addr.offset != 0) Emit(out, "add", {"s64"}, {R(addr_), R(addr_), Imm(static_cast<uint64_t>(addr.offset))});
      } else {
        Emit(out, "mov", {"u64"}, {R(addr_), Imm(static_cast<uint64_t>(addr.offset))});
      }
    }
    const int site = sites_++;
    const std::string slow = "$__gw_f" + std::to_string(site), resume = "$__gw_r" + std::to_string(site);
    Emit(out, "sub", {"s64"}, {R(delta_), R(a), R(base_)});
    if (in.guard >= 0) {
      Emit(out, "setp", {"gt", "and", "u64"}, {R(pred_), R(delta_), R(Limit(bytes)), R(in.guard, in.guard_negated)});
    } else {
      Emit(out, "setp", {"gt", "u64"}, {R(pred_), R(delta_), R(Limit(bytes))});
    }
    // The slow path: what else the access may reach, then the fault. It sits after the body,
    // except in a nested { } scope, whose labels the body outside cannot branch to: there it is
    // inline and the fast path branches over it.
    const bool inline_stub = scope_ > 0;
    std::vector<Statement>* stub = inline_stub ? out : &stubs_;
    Position keep = pos_;
    const int scope = scope_;
    if (inline_stub) {
      Emit(out, "bra", {}, {Sym(resume)}, pred_, true);
    } else {
      Emit(out, "bra", {}, {Sym(slow)}, pred_);
      scope_ = 0;
      Label(stub, slow);
    }
    bool resumes = inline_stub;
    if (space == "generic") {
      for (const char* s : {"shared", "local"}) {
        Emit(stub, "isspacep", {s}, {R(pred_), R(a)});
        Emit(stub, "bra", {}, {Sym(resume)}, pred_);
      }
      resumes = true;
    }
    for (size_t k = 0; k < pointed_to_.size() && !too_large_; ++k) {
      const Variable& v = m_.globals[pointed_to_[k]];
      if ((v.space == Space::kConst && space != "generic") || v.size() < bytes) continue;
      Emit(stub, "mov", {"u64"}, {R(delta_), Sym(v.name)});
      if (space == "generic") {
        Emit(stub, "cvta", {v.space == Space::kConst ? "const" : "global", "u64"}, {R(delta_), R(delta_)});
      }
      Emit(stub, "sub", {"s64"}, {R(delta_), R(a), R(delta_)});
      Emit(stub, "setp", {"le", "u64"}, {R(pred_), R(delta_), Imm(v.size() - bytes)});
      Emit(stub, "bra", {}, {Sym(resume)}, pred_);
      resumes = true;
    }
    Emit(stub, "mov", {"u32"}, {R(line_), Imm(static_cast<uint64_t>(in.pos.line))});
    Emit(stub, "mov", {"u32"}, {R(what_), Imm((store ? 1u << 16 : 0u) | bytes)});
    Emit(stub, "mov", {"u64"}, {R(fault_addr_), R(a)});
    Emit(stub, "mov", {"u32"}, {R(code_), Imm(kFenceFault)});
    Emit(stub, "bra", {}, {Sym("$__gw_fault")});
    used_fault_ = true;
    pos_ = keep;
    scope_ = scope;
    if (resumes) Label(out, resume);
  }

  // Fences the accesses of `in` (in front of it, into `out`).
  void FenceAccesses(std::vector<Statement>* out, const Instruction& in) {
    const std::string& op = in.opcode;
    if (op == "ld" || op == "ldu" || op == "st" || op == "atom" || op == "red") {
      const std::string space = AccessSpace(in);
      if (space != "global" && space != "generic") return;
      const uint32_t bytes = AccessBytes(in);
      for (const Operand& o : in.operands) {
        if (o.kind == Operand::Kind::kAddress) {
          Fence(out, in, o, bytes, op != "ld" && op != "ldu", space);
          return;
        }
      }
      return;
    }
    if (op == "cp" && in.operands.size() >= 3 && in.operands[1].kind == Operand::Kind::kAddress &&
        in.operands[2].kind == Operand::Kind::kImmediate) {  // cp.async: the source is global memory
      Fence(out, in, in.operands[1], static_cast<uint32_t>(in.operands[2].imm_bits), false, "global");
    }
  }

  bool Accesses(const Instruction& in) const {
    const std::string& op = in.opcode;
    if (op == "ld" || op == "ldu" || op == "st" || op == "atom" || op == "red") {
      const std::string s = AccessSpace(in);
      return s == "global" || s == "generic";
    }
    return op == "cp";
  }

  void Rewrite(int fi) {
    fi_ = fi;
    Function& f = m_.functions[static_cast<size_t>(fi)];
    new_regs_.clear();
    stubs_.clear();
    sites_ = 0;
    used_abort_ = used_fault_ = false;
    // Widths the fence compares against (size - n for each).
    std::set<uint32_t> widths;
    if (o_.fence) {
      for (const Statement& s : f.body) {
        if (s.kind != Statement::Kind::kInstruction || !Accesses(s.inst)) continue;
        if (s.inst.opcode == "cp") {
          if (s.inst.operands.size() >= 3) widths.insert(static_cast<uint32_t>(s.inst.operands[2].imm_bits));
        } else {
          widths.insert(AccessBytes(s.inst));
        }
      }
    }
    base_ = NewReg("%__gw_base", Type::kB64);
    size_ = NewReg("%__gw_size", Type::kB64);
    control_ = NewReg("%__gw_control", Type::kB64);
    addr_ = NewReg("%__gw_addr", Type::kB64);
    delta_ = NewReg("%__gw_delta", Type::kB64);
    fault_addr_ = NewReg("%__gw_fault_addr", Type::kB64);
    limits_.clear();
    for (uint32_t w : widths) limits_[w] = NewReg("%__gw_limit" + std::to_string(w), Type::kB64);
    const size_t wide_end = m_.registers.size();
    word_ = NewReg("%__gw_word", Type::kB32);
    line_ = NewReg("%__gw_line", Type::kB32);
    what_ = NewReg("%__gw_what", Type::kB32);
    code_ = NewReg("%__gw_code", Type::kB32);
    old_ = NewReg("%__gw_old", Type::kB32);
    const size_t narrow_end = m_.registers.size();
    pred_ = NewReg("%__gw_p", Type::kPred);

    std::vector<Statement> body;
    std::vector<uint32_t> first_of(f.body.size() + 1, 0);
    // Which statement each label is, for telling backward branches.
    std::map<std::string, size_t> label_at;
    for (size_t i = 0; i < f.body.size(); ++i) {
      if (f.body[i].kind == Statement::Kind::kLabel) label_at[f.body[i].label] = i;
    }
    uint32_t straight = 0;
    for (size_t i = 0; i < f.body.size() && !too_large_; ++i) {
      const Statement& s = f.body[i];
      first_of[i] = static_cast<uint32_t>(body.size());
      pos_ = s.kind == Statement::Kind::kInstruction ? s.inst.pos
             : s.kind == Statement::Kind::kLabel     ? s.inst.pos
                                                     : s.var.pos;
      scope_ = s.scope;
      if (i == 0) Prologue(&body, f);
      if (s.kind != Statement::Kind::kInstruction) {
        body.push_back(s);
        continue;
      }
      const Instruction& in = s.inst;
      if (o_.deadline) {
        bool check = in.opcode == "call" || in.opcode == "brx";
        if (in.opcode == "bra" && !in.operands.empty()) {
          auto it = label_at.find(in.operands[0].symbol);
          check = it != label_at.end() && it->second <= i;
        }
        if (++straight >= kStraightLineBudget) check = true;
        if (check) {
          AbortCheck(&body);
          straight = 0;
        }
      }
      if (o_.fence) FenceAccesses(&body, in);
      if (in.opcode == "trap") {  // a recorded fault and an exit instead of a sticky device error
        Emit(&body, "mov", {"u32"}, {R(line_), Imm(static_cast<uint64_t>(in.pos.line))});
        Emit(&body, "mov", {"u32"}, {R(what_), Imm(0)});
        Emit(&body, "mov", {"u64"}, {R(fault_addr_), Imm(0)});
        Emit(&body, "mov", {"u32"}, {R(code_), Imm(kTrapFault)});
        Emit(&body, "bra", {}, {Sym("$__gw_fault")}, in.guard, in.guard_negated);
        used_fault_ = true;
        continue;
      }
      if (in.opcode == "nanosleep" && !in.operands.empty()) {
        Statement bounded = s;
        Operand& t = bounded.inst.operands[0];
        if (t.kind == Operand::Kind::kImmediate) {
          t.imm_bits = std::min<uint64_t>(t.imm_bits, kMaxNanosleepNs);
        } else if (t.kind == Operand::Kind::kRegister) {
          Emit(&body, "min", {"u32"}, {R(old_), t, Imm(kMaxNanosleepNs)});
          t = R(old_);
        }
        body.push_back(std::move(bounded));
        continue;
      }
      body.push_back(s);
    }
    if (f.body.empty()) {
      pos_ = f.pos;
      scope_ = 0;
      Prologue(&body, f);
    }
    first_of[f.body.size()] = static_cast<uint32_t>(body.size());
    // The stubs sit after the body, behind a return (what falling off the end did before).
    scope_ = 0;
    pos_ = f.pos;
    if (used_abort_ || used_fault_) {
      Emit(&body, "ret", {}, {});
      for (Statement& s : stubs_) body.push_back(std::move(s));
      if (used_fault_) {
        Label(&body, "$__gw_fault");
        Emit(&body, "atom", {"global", "cas", "b32"}, {R(old_), Addr(control_, 4), Imm(0), R(code_)});
        Emit(&body, "setp", {"ne", "u32"}, {R(pred_), R(old_), Imm(0)});
        Emit(&body, "bra", {}, {Sym("$__gw_stop")}, pred_);
        Emit(&body, "st", {"global", "u32"}, {Addr(control_, 8), R(line_)});
        Emit(&body, "st", {"global", "u32"}, {Addr(control_, 12), R(what_)});
        Emit(&body, "st", {"global", "u64"}, {Addr(control_, 16), R(fault_addr_)});
        Label(&body, "$__gw_stop");
        Emit(&body, "st", {"volatile", "global", "u32"}, {Addr(control_, 0), Imm(1)});  // the others stop too
        Emit(&body, "exit", {}, {});
      }
      if (used_abort_) {
        Label(&body, "$__gw_abort");
        Emit(&body, "exit", {}, {});
      }
    }
    for (ScopeEvent& e : f.layout) e.at = first_of[e.at];
    // The pass's registers are declared first, in index order: 64-bit, 32-bit, predicate.
    const int first = new_regs_.front();
    std::vector<ScopeEvent> decls = {
        {ScopeEvent::Kind::kRegisters, 0, first, static_cast<uint32_t>(wide_end - static_cast<size_t>(first)), false},
        {ScopeEvent::Kind::kRegisters, 0, static_cast<int>(wide_end), static_cast<uint32_t>(narrow_end - wide_end),
         false},
        {ScopeEvent::Kind::kRegisters, 0, static_cast<int>(narrow_end), 1, false}};
    f.layout.insert(f.layout.begin(), decls.begin(), decls.end());
    f.body = std::move(body);
  }

  void Prologue(std::vector<Statement>* out, const Function& f) {
    if (f.is_entry) {
      Emit(out, "ld", {"param", "u64"}, {R(base_), AddrSym(kHiddenParams[0], 0)});
      Emit(out, "ld", {"param", "u64"}, {R(size_), AddrSym(kHiddenParams[1], 0)});
      Emit(out, "ld", {"param", "u64"}, {R(control_), AddrSym(kHiddenParams[2], 0)});
      if (shared_context_) {
        Emit(out, "st", {"shared", "u64"}, {AddrSym(kSharedContext, 0), R(base_)});
        Emit(out, "st", {"shared", "u64"}, {AddrSym(kSharedContext, 8), R(size_)});
        Emit(out, "st", {"shared", "u64"}, {AddrSym(kSharedContext, 16), R(control_)});
      }
    } else {
      Emit(out, "ld", {"shared", "u64"}, {R(base_), AddrSym(kSharedContext, 0)});
      Emit(out, "ld", {"shared", "u64"}, {R(size_), AddrSym(kSharedContext, 8)});
      Emit(out, "ld", {"shared", "u64"}, {R(control_), AddrSym(kSharedContext, 16)});
    }
    for (const auto& [bytes, reg] : limits_) Emit(out, "sub", {"s64"}, {R(reg), R(size_), Imm(bytes)});
  }

  Module m_;
  InstrumentOptions o_;
  bool shared_context_ = false;
  std::vector<size_t> pointed_to_;  // indices into m_.globals (FindPointedTo)
  size_t emitted_ = 0;              // statements the pass wrote
  bool too_large_ = false;
  // Per function:
  int fi_ = -1;
  std::vector<int> new_regs_;
  std::vector<Statement> stubs_;
  std::map<uint32_t, int> limits_;
  int base_ = -1, size_ = -1, control_ = -1, addr_ = -1, delta_ = -1, fault_addr_ = -1;
  int word_ = -1, line_ = -1, what_ = -1, code_ = -1, old_ = -1, pred_ = -1;
  int sites_ = 0;
  bool used_abort_ = false, used_fault_ = false;
  Position pos_;
  int scope_ = 0;
};

}  // namespace

Result<Module> Instrument(const Module& m, const InstrumentOptions& options) { return Instrumenter(m, options).Run(); }

std::string DescribeControlFault(const ControlBlock& block, const std::string& kernel) {
  std::string where = "kernel '" + kernel + "' (PTX line " + std::to_string(block.line) + "): ";
  if (block.fault == kTrapFault) return where + "trap instruction executed";
  return where + "global " + ((block.access >> 16) & 1 ? "store" : "load") + " of " +
         std::to_string(block.access & 0xffff) + " bytes at " + Hex(block.address) +
         " is outside the instance's buffers";
}

Status ControlBlockStatus(const void* control, const std::string& kernel) {
  // The kernel's threads wrote the block with atomics and stores the launch's end ordered before
  // this read; the words are read one by one, as the host's abort store is.
  auto word = [control](size_t i) {
    return std::atomic_ref<uint32_t>(*(static_cast<uint32_t*>(const_cast<void*>(control)) + i)).load();
  };
  ControlBlock b;
  b.abort = word(0);
  b.fault = word(1);
  if (b.fault == kNoFault) {
    if (b.abort == 0) return Status::Ok();
    return Status::DeadlineExceeded("kernel '" + kernel +
                                    "' was stopped by its abort word (the invocation's deadline)");
  }
  b.line = word(2);
  b.access = word(3);
  b.address = uint64_t{word(4)} | uint64_t{word(5)} << 32;
  return Status::DeviceFault(DescribeControlFault(b, kernel));
}

}  // namespace gpuwasm::ptx
