#include "ptx/printer.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace gpuwasm::ptx {
namespace {

const char* SpaceName(Space s) {
  switch (s) {
    case Space::kGlobal: return ".global";
    case Space::kShared: return ".shared";
    case Space::kLocal: return ".local";
    case Space::kConst: return ".const";
    case Space::kParam: return ".param";
    case Space::kGeneric:
    case Space::kNone: break;
  }
  return "";
}

std::string Hex(const char* prefix, int digits, uint64_t bits) {
  char b[32];
  std::snprintf(b, sizeof b, "%s%0*" PRIX64, prefix, digits, bits);
  return b;
}

// An integer as the parser reads it back to the same 64 bits: values with the top bit set as
// negative decimals (ptxas takes -1 for a .u32 operand, not 0xFFFFFFFFFFFFFFFF).
std::string Integer(uint64_t bits) {
  if (bits >> 63) return "-" + std::to_string(0 - bits);
  return std::to_string(bits);
}

class Printer {
 public:
  Printer(const Module& m, const PrintOptions& o) : m_(m), keep_lines_(o.keep_lines) {}

  std::string Run() {
    // Keeping lines, everything outside bodies goes on as few lines as it can (PTX is free-form):
    // the first statement of a body is often only a line or two below the module's header.
    const char* nl = keep_lines_ ? " " : "\n";
    out_ += ".version " + m_.version + nl + ".target " + m_.target;
    for (const std::string& o : m_.target_options) out_ += ", " + o;
    out_ += nl + (".address_size " + std::to_string(m_.address_size)) + nl + (keep_lines_ ? "" : "\n");
    for (const Variable& v : m_.globals) {
      VariableDecl(v);
      out_ += nl;
    }
    // Every .func is declared before any body, so a call never precedes its callee's declaration
    // (nvcc's own order needs that too: it declares what it defines after its first caller).
    for (const Function& f : m_.functions) {
      if (f.is_entry && f.has_body) continue;
      Header(f);
      out_ += ";";
      out_ += nl;
    }
    for (const Function& f : m_.functions) {
      if (!f.has_body) continue;
      out_ += nl;
      Header(f);
      Body(f);
    }
    return std::move(out_);
  }

 private:
  void VariableDecl(const Variable& v) {
    if (v.is_extern) out_ += ".extern ";
    out_ += SpaceName(v.space);
    out_ += " .align " + std::to_string(v.align) + " " + TypeName(v.type) + " " + v.name;
    if (v.is_array) out_ += v.count == 0 ? "[]" : "[" + std::to_string(v.count) + "]";
    const unsigned es = TypeSize(v.type);
    if (!v.init.empty() && es != 0) {
      out_ += " = ";
      if (v.is_array) out_ += "{";
      for (size_t k = 0; k + es <= v.init.size(); k += es) {
        uint64_t bits = 0;
        for (unsigned b = 0; b < es; ++b) bits |= uint64_t{v.init[k + b]} << (8 * b);
        if (k != 0) out_ += ", ";
        out_ += v.type == Type::kF32   ? Hex("0f", 8, bits)
                : v.type == Type::kF64 ? Hex("0d", 16, bits)
                                       : std::to_string(bits);
      }
      if (v.is_array) out_ += "}";
    }
    out_ += ";";
  }

  void ParamDecl(const Param& p) {
    out_ += p.is_reg ? ".reg " : ".param ";
    if (p.align != TypeSize(p.type)) out_ += ".align " + std::to_string(p.align) + " ";
    out_ += std::string(TypeName(p.type)) + " " + p.name;
    if (p.count != 1) out_ += "[" + std::to_string(p.count) + "]";
  }

  void ParamList(const std::vector<Param>& ps) {
    out_ += "(";
    for (size_t k = 0; k < ps.size(); ++k) {
      out_ += k == 0 ? "" : ",";
      out_ += keep_lines_ ? " " : "\n\t";
      ParamDecl(ps[k]);
    }
    out_ += keep_lines_ ? " )" : "\n)";
  }

  void Header(const Function& f) {
    if (!f.has_body) out_ += ".extern ";
    if (f.visible) out_ += ".visible ";
    out_ += f.is_entry ? ".entry " : ".func ";
    if (!f.is_entry && !f.returns.empty()) {
      ParamList(f.returns);
      out_ += " ";
    }
    out_ += f.name;
    ParamList(f.params);
    int dims = 3;  // up to the last nonzero dimension (the parser reads a missing one as 0)
    while (dims > 0 && f.maxntid[dims - 1] == 0) --dims;
    if (dims > 0) {
      out_ += (keep_lines_ ? " " : "\n") + (".maxntid " + std::to_string(f.maxntid[0]));
      for (int k = 1; k < dims; ++k) out_ += ", " + std::to_string(f.maxntid[k]);
    }
  }

  void Indent(int depth) { out_.append(static_cast<size_t>(depth) + 1, '\t'); }

  // Starts the next item of a body on a new line or, keeping lines, on the line it came from in
  // the source (several items of one source line share it; an item of an earlier line goes on
  // the next line).
  void Begin(int source_line, int depth) {
    if (keep_lines_ && source_line > line_) {
      out_.append(static_cast<size_t>(source_line - line_), '\n');
      line_ = source_line;
    } else if (keep_lines_ && source_line == line_ && joinable_) {
      out_ += ' ';
      joinable_ = true;
      return;
    } else {
      out_ += '\n';
      ++line_;
    }
    joinable_ = true;
    Indent(depth);
  }

  void Event(const ScopeEvent& e, int* depth) {
    switch (e.kind) {
      case ScopeEvent::Kind::kOpen:
        Begin(0, *depth);
        out_ += "{";
        ++*depth;
        break;
      case ScopeEvent::Kind::kClose:
        --*depth;
        Begin(0, *depth);
        out_ += "}";
        break;
      case ScopeEvent::Kind::kRegisters: {
        const Register& first = m_.registers[static_cast<size_t>(e.first_reg)];
        Begin(0, *depth);
        out_ += std::string(".reg ") + TypeName(first.type) + " ";
        if (e.range) {
          out_ += first.name.substr(0, first.name.size() - 1) + "<" + std::to_string(e.count) + ">";
        } else {
          for (uint32_t k = 0; k < e.count; ++k) {
            if (k != 0) out_ += ", ";
            out_ += m_.registers[static_cast<size_t>(e.first_reg) + k].name;
          }
        }
        out_ += ";";
        break;
      }
    }
    joinable_ = false;
  }

  void Body(const Function& f) {
    out_ += keep_lines_ ? " {" : "\n{";
    line_ = 1 + static_cast<int>(std::count(out_.begin(), out_.end(), '\n'));
    joinable_ = false;
    int depth = 0;
    size_t e = 0;
    for (size_t i = 0; i <= f.body.size(); ++i) {
      for (; e < f.layout.size() && f.layout[e].at <= i; ++e) Event(f.layout[e], &depth);
      if (i == f.body.size()) break;
      const Statement& s = f.body[i];
      switch (s.kind) {
        case Statement::Kind::kLabel:
          Begin(s.inst.pos.line, -1);
          out_ += s.label + ":";
          break;
        case Statement::Kind::kVariable:
          Begin(s.var.pos.line, depth);
          VariableDecl(s.var);
          break;
        case Statement::Kind::kInstruction:
          Begin(s.inst.pos.line, depth);
          Instruction(s.inst);
          break;
      }
    }
    out_ += keep_lines_ ? " }" : "\n}\n";
  }

  void Instruction(const ptx::Instruction& in) {
    if (in.guard >= 0)
      out_ += std::string(in.guard_negated ? "@!" : "@") + m_.registers[static_cast<size_t>(in.guard)].name + " ";
    out_ += in.text();
    // A call's argument lists are parenthesised; every other list is a vector in braces.
    const bool call = in.opcode == "call";
    for (size_t k = 0; k < in.operands.size(); ++k) {
      out_ += k == 0 ? " " : ", ";
      Operand(in.operands[k], call);
    }
    out_ += ";";
  }

  void Operand(const ptx::Operand& o, bool parens) {
    using K = ptx::Operand::Kind;
    switch (o.kind) {
      case K::kRegister:
        if (o.negate) out_ += "!";
        if (o.minus) out_ += "-";
        out_ += m_.registers[static_cast<size_t>(o.reg)].name;
        if (!o.select.empty()) out_ += "." + o.select;
        if (o.reg2 >= 0) out_ += "|" + m_.registers[static_cast<size_t>(o.reg2)].name;
        return;
      case K::kImmediate:
        out_ += o.imm_float ? Hex("0f", 8, o.imm_bits) : o.imm_double ? Hex("0d", 16, o.imm_bits) : Integer(o.imm_bits);
        return;
      case K::kAddress: {
        out_ += "[";
        if (o.reg >= 0)
          out_ += m_.registers[static_cast<size_t>(o.reg)].name;
        else
          out_ += o.symbol;
        const bool base = o.reg >= 0 || !o.symbol.empty();
        const uint64_t off = static_cast<uint64_t>(o.offset);
        if (!base)
          out_ += Integer(off);
        else if (o.offset < 0)
          out_ += "+-" + std::to_string(0 - off);  // nvcc's form; ptxas refuses "-4"
        else if (o.offset > 0)
          out_ += "+" + std::to_string(off);
        out_ += "]";
        return;
      }
      case K::kVector:
        out_ += parens ? "(" : "{";
        for (size_t k = 0; k < o.elements.size(); ++k) {
          if (k != 0) out_ += ", ";
          Operand(o.elements[k], false);
        }
        out_ += parens ? ")" : "}";
        return;
      case K::kSymbol:
      case K::kLabel:
      case K::kSpecial: out_ += o.symbol; return;
      case K::kSink: out_ += "_"; return;
    }
  }

  const Module& m_;
  const bool keep_lines_;
  std::string out_;
  int line_ = 1;           // of the end of out_, in a body
  bool joinable_ = false;  // the last item was a statement: one of the same line may follow on it
};

// Diff: the first difference, described.
class Differ {
 public:
  std::string Modules(const Module& a, const Module& b) {
    if (a.version != b.version || a.target != b.target || a.target_options != b.target_options ||
        a.address_size != b.address_size) {
      return "module header differs";
    }
    if (a.globals.size() != b.globals.size()) return "number of module variables differs";
    for (size_t k = 0; k < a.globals.size(); ++k) {
      if (!Same(a.globals[k], b.globals[k])) return "module variable '" + a.globals[k].name + "' differs";
    }
    if (a.registers.size() != b.registers.size()) return "number of registers differs";
    for (size_t k = 0; k < a.registers.size(); ++k) {
      const Register &x = a.registers[k], &y = b.registers[k];
      if (x.name != y.name || x.type != y.type || x.function != y.function) {
        return "register " + std::to_string(k) + " (" + x.name + ") differs";
      }
    }
    if (a.functions.size() != b.functions.size()) return "number of functions differs";
    for (size_t k = 0; k < a.functions.size(); ++k) {
      std::string d = Functions(a.functions[k], b.functions[k]);
      if (!d.empty()) return "function '" + a.functions[k].name + "': " + d;
    }
    return "";
  }

 private:
  static bool Same(const Variable& x, const Variable& y) {
    return x.name == y.name && x.space == y.space && x.type == y.type && x.align == y.align && x.count == y.count &&
           x.is_array == y.is_array && x.is_extern == y.is_extern && x.init == y.init;
  }
  static bool Same(const Param& x, const Param& y) {
    return x.name == y.name && x.is_reg == y.is_reg && x.type == y.type && x.align == y.align && x.count == y.count &&
           x.size == y.size && x.offset == y.offset;
  }
  static bool Same(const std::vector<Param>& x, const std::vector<Param>& y) {
    if (x.size() != y.size()) return false;
    for (size_t k = 0; k < x.size(); ++k) {
      if (!Same(x[k], y[k])) return false;
    }
    return true;
  }
  static bool Same(const Operand& x, const Operand& y) {
    if (x.kind != y.kind || x.reg != y.reg || x.symbol != y.symbol || x.offset != y.offset ||
        x.imm_bits != y.imm_bits || x.imm_float != y.imm_float || x.imm_double != y.imm_double ||
        x.negate != y.negate || x.minus != y.minus || x.select != y.select || x.reg2 != y.reg2 ||
        x.elements.size() != y.elements.size()) {
      return false;
    }
    for (size_t k = 0; k < x.elements.size(); ++k) {
      if (!Same(x.elements[k], y.elements[k])) return false;
    }
    return true;
  }
  static std::string Instructions(const ptx::Instruction& x, const ptx::Instruction& y) {
    if (x.guard != y.guard || x.guard_negated != y.guard_negated) return "guard differs";
    if (x.opcode != y.opcode || x.modifiers != y.modifiers) return "'" + x.text() + "' vs '" + y.text() + "'";
    if (x.operands.size() != y.operands.size()) return "number of operands of " + x.text() + " differs";
    for (size_t k = 0; k < x.operands.size(); ++k) {
      if (!Same(x.operands[k], y.operands[k])) return "operand " + std::to_string(k) + " of " + x.text() + " differs";
    }
    return "";
  }
  static std::string Functions(const Function& x, const Function& y) {
    if (x.name != y.name || x.is_entry != y.is_entry || x.visible != y.visible || x.has_body != y.has_body) {
      return "declaration differs";
    }
    if (!Same(x.params, y.params) || !Same(x.returns, y.returns) || x.param_bytes != y.param_bytes)
      return "parameters differ";
    for (int k = 0; k < 3; ++k) {
      if (x.maxntid[k] != y.maxntid[k]) return ".maxntid differs";
    }
    if (x.body.size() != y.body.size()) return "number of statements differs";
    for (size_t k = 0; k < x.body.size(); ++k) {
      const Statement &s = x.body[k], &t = y.body[k];
      std::string where = "statement " + std::to_string(k) + ": ";
      if (s.kind != t.kind || s.scope != t.scope || s.label != t.label) return where + "kind, scope or label differs";
      if (s.kind == Statement::Kind::kVariable && !Same(s.var, t.var)) return where + "variable differs";
      if (s.kind == Statement::Kind::kInstruction) {
        std::string d = Instructions(s.inst, t.inst);
        if (!d.empty()) return where + d;
      }
    }
    if (x.layout.size() != y.layout.size()) return "number of scope events differs";
    for (size_t k = 0; k < x.layout.size(); ++k) {
      const ScopeEvent &e = x.layout[k], &f = y.layout[k];
      if (e.kind != f.kind || e.at != f.at || e.first_reg != f.first_reg || e.count != f.count || e.range != f.range) {
        return "scope event " + std::to_string(k) + " differs";
      }
    }
    return "";
  }
};

}  // namespace

std::string Print(const Module& module, const PrintOptions& options) { return Printer(module, options).Run(); }

std::string Diff(const Module& a, const Module& b) { return Differ().Modules(a, b); }

}  // namespace gpuwasm::ptx
