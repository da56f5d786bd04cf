// Validation of a parsed PTX module (see parser.h).
#include <set>
#include <unordered_set>

#include "ptx/parser.h"

namespace gpuwasm::ptx {
namespace {

const std::unordered_set<std::string> kOpcodes = {"abs",
                                                  "activemask",
                                                  "add",
                                                  "addc",
                                                  "and",
                                                  "atom",
                                                  "bar",
                                                  "barrier",
                                                  "bfe",
                                                  "bfi",
                                                  "bfind",
                                                  "bra",
                                                  "brev",
                                                  "brkpt",
                                                  "call",
                                                  "clz",
                                                  "cnot",
                                                  "copysign",
                                                  "cos",
                                                  "cvt",
                                                  "cvta",
                                                  "div",
                                                  "dp2a",
                                                  "dp4a",
                                                  "ex2",
                                                  "exit",
                                                  "fence",
                                                  "fma",
                                                  "fns",
                                                  "isspacep",
                                                  "ld",
                                                  "ldu",
                                                  "lg2",
                                                  "lop3",
                                                  "mad",
                                                  "mad24",
                                                  "madc",
                                                  "match",
                                                  "max",
                                                  "membar",
                                                  "min",
                                                  "mov",
                                                  "mul",
                                                  "mul24",
                                                  "nanosleep",
                                                  "neg",
                                                  "not",
                                                  "or",
                                                  "pmevent",
                                                  "popc",
                                                  "prefetch",
                                                  "prefetchu",
                                                  "prmt",
                                                  "rcp",
                                                  "red",
                                                  "redux",
                                                  "rem",
                                                  "ret",
                                                  "rsqrt",
                                                  "sad",
                                                  "selp",
                                                  "set",
                                                  "setp",
                                                  "shf",
                                                  "shfl",
                                                  "shl",
                                                  "shr",
                                                  "sin",
                                                  "slct",
                                                  "sqrt",
                                                  "st",
                                                  "sub",
                                                  "subc",
                                                  "suld",
                                                  "sured",
                                                  "sust",
                                                  "suq",
                                                  "tanh",
                                                  "testp",
                                                  "tex",
                                                  "tld4",
                                                  "trap",
                                                  "txq",
                                                  "vote",
                                                  "xor",
                                                  "mma",
                                                  "wmma",
                                                  "ldmatrix",
                                                  "stmatrix",
                                                  "cp",
                                                  "mbarrier",
                                                  "elect",
                                                  "griddepcontrol",
                                                  "alloca",
                                                  "stacksave",
                                                  "stackrestore",
                                                  "getctarank",
                                                  "setmaxnreg",
                                                  "multimem",
                                                  "createpolicy",
                                                  "discard",
                                                  "applypriority",
                                                  "istypep",
                                                  "red.async",
                                                  "st.async",
                                                  "cvt.pack",
                                                  "wgmma",
                                                  "tensormap",
                                                  "clusterlaunchcontrol",
                                                  "vabsdiff",
                                                  "vadd",
                                                  "vsub",
                                                  "vmad",
                                                  "vmax",
                                                  "vmin",
                                                  "vset",
                                                  "vshl",
                                                  "vshr",
                                                  "vabsdiff2",
                                                  "vadd2",
                                                  "vsub2",
                                                  "vavrg2",
                                                  "vmax2",
                                                  "vmin2",
                                                  "vset2",
                                                  "vabsdiff4",
                                                  "vadd4",
                                                  "vsub4",
                                                  "vavrg4",
                                                  "vmax4",
                                                  "vmin4",
                                                  "vset4",
                                                  "szext",
                                                  "bmsk",
                                                  "brx",
                                                  "mapa",
                                                  "movmatrix",
                                                  "tcgen05"};

Status ErrorAt(Position p, const std::string& m) {
  return Status::InvalidArgument("line " + std::to_string(p.line) + ", column " + std::to_string(p.col) + ": " + m);
}

bool HasModifier(const Instruction& in, std::string_view m) {
  for (const std::string& s : in.modifiers) {
    if (s == m) return true;
  }
  return false;
}

// The type modifiers of an instruction, in order (".u32" -> kU32).
std::vector<Type> Types(const Instruction& in) {
  std::vector<Type> t;
  for (const std::string& m : in.modifiers) {
    if (auto ty = ParseType("." + m)) t.push_back(*ty);
  }
  return t;
}

class Validator {
 public:
  explicit Validator(const Module& m) : m_(m) {}

  Status Run() {
    std::set<std::string> names;
    for (const Variable& v : m_.globals) names.insert(v.name);
    for (const Function& f : m_.functions) {
      if (!f.has_body) continue;
      GPUWASM_RETURN_IF_ERROR(CheckFunction(f));
    }
    return Status::Ok();
  }

 private:
  Status CheckFunction(const Function& f) {
    labels_.clear();
    locals_.clear();
    for (const Param& p : f.params) locals_.insert(p.name);
    for (const Param& p : f.returns) locals_.insert(p.name);
    for (const Statement& s : f.body) {
      if (s.kind == Statement::Kind::kLabel) {
        if (!labels_.insert(s.label).second) return ErrorAt(s.inst.pos, "label " + s.label + " defined twice");
      } else if (s.kind == Statement::Kind::kVariable) {
        locals_.insert(s.var.name);
      }
    }
    for (const Statement& s : f.body) {
      if (s.kind != Statement::Kind::kInstruction) continue;
      GPUWASM_RETURN_IF_ERROR(CheckInstruction(f, s.inst));
    }
    return Status::Ok();
  }

  bool KnownSymbol(const std::string& name) const {
    return locals_.count(name) != 0 || m_.FindGlobal(name) != nullptr || m_.FindFunction(name) != nullptr;
  }

  unsigned RegBits(int reg) const { return TypeSize(m_.registers[reg].type) * 8; }
  Type RegType(int reg) const { return m_.registers[reg].type; }

  Status CheckWidth(const Instruction& in, const Operand& o, size_t index, Type want, bool allow_wider = false) const {
    if (o.kind != Operand::Kind::kRegister || want == Type::kNone) return Status::Ok();
    Type have = RegType(o.reg);
    if (want == Type::kPred || have == Type::kPred) {
      if (want != have) {
        return ErrorAt(o.pos, in.text() + ": operand " + std::to_string(index + 1) + " (" + m_.registers[o.reg].name +
                                  ") is " + TypeName(have) + ", the instruction needs " + TypeName(want));
      }
      return Status::Ok();
    }
    unsigned need = TypeSize(want) * 8, got = RegBits(o.reg);
    if (got == need || (allow_wider && got > need)) return Status::Ok();
    return ErrorAt(o.pos, in.text() + ": operand " + std::to_string(index + 1) + " (" + m_.registers[o.reg].name +
                              ") is a " + std::to_string(got) + "-bit register, the instruction needs " +
                              std::to_string(need) + "-bit " + TypeName(want));
  }

  Status CheckSymbols(const Function& f, const Instruction& in, const Operand& o) const {
    if (o.kind == Operand::Kind::kVector) {
      for (const Operand& e : o.elements) GPUWASM_RETURN_IF_ERROR(CheckSymbols(f, in, e));
      return Status::Ok();
    }
    if ((o.kind == Operand::Kind::kSymbol || (o.kind == Operand::Kind::kAddress && !o.symbol.empty())) &&
        !KnownSymbol(o.symbol)) {
      return ErrorAt(o.pos, "undefined symbol " + o.symbol + " in " + in.text());
    }
    (void)f;
    return Status::Ok();
  }

  // Selectors (%r.b0), masks (%r.h10) and negated registers (-%r) belong to video instructions.
  static Status CheckVideoForms(const Instruction& in, const std::vector<Operand>& ops) {
    const bool video = in.opcode.size() > 1 && in.opcode[0] == 'v' && kOpcodes.count(in.opcode) != 0;
    for (const Operand& o : ops) {
      if (!o.select.empty() && (!video || o.kind != Operand::Kind::kRegister)) {
        return ErrorAt(o.pos, "operand selector ." + o.select + " in " + in.text() +
                                  ": selectors and masks belong to video instructions");
      }
      if (o.minus && in.opcode != "vmad") return ErrorAt(o.pos, "a negated register ('-') in " + in.text());
      GPUWASM_RETURN_IF_ERROR(CheckVideoForms(in, o.elements));
    }
    return Status::Ok();
  }

  Status CheckInstruction(const Function& f, const Instruction& in) {
    if (kOpcodes.count(in.opcode) == 0) {
      return ErrorAt(in.pos, "unknown instruction '" + in.text() + "'");
    }
    if (in.guard >= 0 && RegType(in.guard) != Type::kPred) {
      return ErrorAt(in.pos, "guard " + m_.registers[in.guard].name + " of " + in.text() + " is not a .pred register");
    }
    const auto& ops = in.operands;
    GPUWASM_RETURN_IF_ERROR(CheckVideoForms(in, ops));
    if (in.opcode == "bra") {
      if (ops.size() != 1 || ops[0].kind != Operand::Kind::kSymbol) return ErrorAt(in.pos, "bra needs one label");
      if (labels_.count(ops[0].symbol) == 0) return ErrorAt(ops[0].pos, "undefined label " + ops[0].symbol);
      return Status::Ok();
    }
    if (in.opcode == "call") {
      const Operand* callee = nullptr;
      for (const Operand& o : ops) {
        if (o.kind == Operand::Kind::kSymbol) callee = &o;
      }
      if (callee == nullptr) return ErrorAt(in.pos, "call without a target function");
      if (m_.FindFunction(callee->symbol) == nullptr)
        return ErrorAt(callee->pos, "undefined function " + callee->symbol);
      for (const Operand& o : ops) {
        if (&o != callee) GPUWASM_RETURN_IF_ERROR(CheckSymbols(f, in, o));
      }
      return Status::Ok();
    }
    for (const Operand& o : ops) GPUWASM_RETURN_IF_ERROR(CheckSymbols(f, in, o));
    // An address is an integer, in every instruction that takes one (ld, st, atom, red, prefetch, ...).
    for (const Operand& o : ops) {
      if (o.kind != Operand::Kind::kAddress || o.reg < 0) continue;
      if (RegType(o.reg) == Type::kPred) return ErrorAt(o.pos, "a predicate cannot be an address");
      if (IsFloat(RegType(o.reg))) return ErrorAt(o.pos, "a floating-point register cannot be an address");
    }

    std::vector<Type> t = Types(in);
    Type T = t.empty() ? Type::kNone : t.back();
    const std::string& op = in.opcode;
    auto check_all = [&](size_t from, Type want, bool wider = false) -> Status {
      for (size_t k = from; k < ops.size(); ++k) GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[k], k, want, wider));
      return Status::Ok();
    };
    static const std::unordered_set<std::string> kSameType = {
        "add", "sub", "min",      "max",  "neg", "abs",   "and", "or",  "xor", "not", "cnot", "div",
        "rem", "fma", "copysign", "sqrt", "rcp", "rsqrt", "sin", "cos", "ex2", "lg2", "tanh", "brev"};
    if (kSameType.count(op) != 0 || ((op == "mul" || op == "mad") && !HasModifier(in, "wide"))) {
      if (T == Type::kPred && (op == "and" || op == "or" || op == "xor" || op == "not"))
        return check_all(0, Type::kPred);
      return check_all(0, T);
    }
    if (op == "mul" || op == "mad") {  // .wide
      Type wide = TypeSize(T) == 2 ? Type::kB32 : TypeSize(T) == 4 ? Type::kB64 : Type::kNone;
      if (wide == Type::kNone) return ErrorAt(in.pos, in.text() + ": .wide needs a 16- or 32-bit type");
      const size_t n = op == "mad" ? 4 : 3;
      if (ops.size() != n) return ErrorAt(in.pos, in.text() + " needs " + std::to_string(n) + " operands");
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[0], 0, wide));
      for (size_t k = 1; k < 3; ++k) GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[k], k, T));
      if (op == "mad") GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[3], 3, wide));
      return Status::Ok();
    }
    if (op == "shl" || op == "shr") {
      if (ops.size() != 3) return ErrorAt(in.pos, in.text() + " needs 3 operands");
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[0], 0, T));
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[1], 1, T));
      return CheckWidth(in, ops[2], 2, Type::kU32);
    }
    if (op == "popc" || op == "clz" || op == "bfind") {
      if (ops.size() != 2) return ErrorAt(in.pos, in.text() + " needs 2 operands");
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[0], 0, Type::kU32));
      return CheckWidth(in, ops[1], 1, T);
    }
    if (op == "selp") {
      if (ops.size() != 4) return ErrorAt(in.pos, "selp needs 4 operands");
      for (size_t k = 0; k < 3; ++k) GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[k], k, T));
      return CheckWidth(in, ops[3], 3, Type::kPred);
    }
    if (op == "setp") {
      if (ops.size() < 3) return ErrorAt(in.pos, "setp needs at least 3 operands");
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[0], 0, Type::kPred));
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[1], 1, T));
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[2], 2, T));
      if (ops.size() > 3) GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[3], 3, Type::kPred));
      return Status::Ok();
    }
    if (op == "cvt" && HasModifier(in, "pack")) {  // cvt.pack.sat: d, a, b[, c] (the decoder checks the forms)
      if (ops.size() != 3 && ops.size() != 4) return ErrorAt(in.pos, "cvt.pack needs 3 or 4 operands");
      return check_all(0, Type::kB32);
    }
    if (op == "cvt" && t.size() == 2 && (t[0] == Type::kF16x2 || t[0] == Type::kBF16x2) && t[1] == Type::kF32) {
      // d, a (upper), b (lower); .rs adds the random bits
      const size_t n = HasModifier(in, "rs") ? 4 : 3;
      if (ops.size() != n) return ErrorAt(in.pos, "a packing cvt needs " + std::to_string(n) + " operands");
      if (n == 4) GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[3], 3, Type::kB32));
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[0], 0, t[0]));
      for (size_t k = 1; k < 3; ++k) GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[k], k, Type::kF32));
      return Status::Ok();
    }
    if (op == "cvt" && t.size() == 2) {
      if (ops.size() != 2) return ErrorAt(in.pos, "cvt needs 2 operands");
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[0], 0, t[0], TypeSize(t[0]) < 4));
      // An integer source may sit in a wider register (its low bits are converted), as nvcc emits.
      return CheckWidth(in, ops[1], 1, t[1], TypeSize(t[1]) < 4 || !IsFloat(t[1]));
    }
    if (op == "ld" || op == "st" || op == "ldu") {
      if (ops.size() != 2) return ErrorAt(in.pos, in.text() + " needs 2 operands");
      const Operand& addr = op == "st" ? ops[0] : ops[1];
      const Operand& val = op == "st" ? ops[1] : ops[0];
      if (addr.kind != Operand::Kind::kAddress) return ErrorAt(addr.pos, in.text() + " needs an address operand [...]");
      // Relaxed typing: integer loads extend into, and stores truncate from, wider registers.
      bool wider = !IsFloat(T) || TypeSize(T) < 4;
      if (val.kind == Operand::Kind::kVector) {
        for (size_t k = 0; k < val.elements.size(); ++k) {
          GPUWASM_RETURN_IF_ERROR(CheckWidth(in, val.elements[k], op == "st" ? 1 : 0, T, wider));
        }
        return Status::Ok();
      }
      return CheckWidth(in, val, op == "st" ? 1 : 0, T, wider);
    }
    if (op == "mov" && ops.size() == 2 && ops[1].kind == Operand::Kind::kRegister &&
        ops[0].kind == Operand::Kind::kRegister) {
      GPUWASM_RETURN_IF_ERROR(CheckWidth(in, ops[0], 0, T));
      return CheckWidth(in, ops[1], 1, T);
    }
    return Status::Ok();
  }

  const Module& m_;
  std::unordered_set<std::string> labels_;
  std::unordered_set<std::string> locals_;
};

}  // namespace

Status Validate(const Module& module) {
  for (const Function& f : module.functions) {
    if (f.is_entry && !f.has_body) return Status::InvalidArgument("kernel '" + f.name + "' has no body");
  }
  return Validator(module).Run();
}

}  // namespace gpuwasm::ptx
