#include "ptx/parser.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <unordered_map>

namespace gpuwasm::ptx {

namespace {

struct Token {
  enum Kind { kEnd, kIdent, kInt, kFloat, kString, kPunct } kind = kEnd;
  std::string text;
  uint64_t value = 0;  // ints; float bits
  bool is_double = false;
  char punct = 0;
  Position pos;
};

bool IdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}
bool IdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.';
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}
  size_t offset() const { return i_; }

  Status Next(Token* t) {
    SkipSpace();
    t->pos = {line_, Col()};
    t->text.clear();
    if (i_ >= s_.size()) {
      t->kind = Token::kEnd;
      return Status::Ok();
    }
    char c = s_[i_];
    if (std::isdigit(static_cast<unsigned char>(c))) return Number(t);
    if (IdentStart(c)) {
      size_t b = i_;
      while (i_ < s_.size() && IdentChar(s_[i_])) ++i_;
      t->kind = Token::kIdent;
      t->text = std::string(s_.substr(b, i_ - b));
      return Status::Ok();
    }
    if (c == '"') {
      size_t b = ++i_;
      while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\n') ++i_;
      if (i_ >= s_.size() || s_[i_] != '"') return Error(t->pos, "unterminated string");
      t->kind = Token::kString;
      t->text = std::string(s_.substr(b, i_ - b));
      ++i_;
      return Status::Ok();
    }
    if (std::strchr(",;:{}[]()+-|!@<>=*", c) != nullptr) {
      t->kind = Token::kPunct;
      t->punct = c;
      t->text = std::string(1, c);
      ++i_;
      return Status::Ok();
    }
    return Error(t->pos, std::string("unexpected character '") + c + "'");
  }

  void SkipLine() {
    while (i_ < s_.size() && s_[i_] != '\n') ++i_;
  }

  static Status Error(Position p, const std::string& m) {
    return Status::InvalidArgument("line " + std::to_string(p.line) + ", column " + std::to_string(p.col) + ": " + m);
  }

 private:
  int Col() const { return static_cast<int>(i_ - line_start_) + 1; }

  void SkipSpace() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '\n') {
        ++line_;
        line_start_ = ++i_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++i_;
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
        SkipLine();
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '*') {
        i_ += 2;
        while (i_ + 1 < s_.size() && !(s_[i_] == '*' && s_[i_ + 1] == '/')) {
          if (s_[i_] == '\n') {
            ++line_;
            line_start_ = i_ + 1;
          }
          ++i_;
        }
        i_ = std::min(i_ + 2, s_.size());
      } else {
        break;
      }
    }
  }

  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  Status Number(Token* t) {
    size_t b = i_;
    if (s_[i_] == '0' && i_ + 1 < s_.size() &&
        (s_[i_ + 1] == 'f' || s_[i_ + 1] == 'F' || s_[i_ + 1] == 'd' || s_[i_ + 1] == 'D')) {
      bool dbl = s_[i_ + 1] == 'd' || s_[i_ + 1] == 'D';
      size_t digits = dbl ? 16 : 8;
      i_ += 2;
      uint64_t v = 0;
      for (size_t k = 0; k < digits; ++k) {
        if (i_ >= s_.size() || Hex(s_[i_]) < 0) return Error(t->pos, "malformed hexadecimal float constant");
        v = v << 4 | static_cast<uint64_t>(Hex(s_[i_++]));
      }
      t->kind = Token::kFloat;
      t->value = v;
      t->is_double = dbl;
      t->text = std::string(s_.substr(b, i_ - b));
      return Status::Ok();
    }
    if (s_[i_] == '0' && i_ + 1 < s_.size() && (s_[i_ + 1] == 'x' || s_[i_ + 1] == 'X')) {
      i_ += 2;
      uint64_t v = 0;
      size_t n = 0;
      while (i_ < s_.size() && Hex(s_[i_]) >= 0) {
        if (++n > 16) return Error(t->pos, "integer constant too large");
        v = v << 4 | static_cast<uint64_t>(Hex(s_[i_++]));
      }
      if (n == 0) return Error(t->pos, "malformed hexadecimal constant");
      if (i_ < s_.size() && s_[i_] == 'U') ++i_;
      t->kind = Token::kInt;
      t->value = v;
      t->text = std::string(s_.substr(b, i_ - b));
      return Status::Ok();
    }
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    bool is_float = false;
    if (i_ < s_.size() && s_[i_] == '.') {
      is_float = true;
      ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      is_float = true;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    t->text = std::string(s_.substr(b, i_ - b));
    if (is_float) {
      double d = std::strtod(t->text.c_str(), nullptr);
      std::memcpy(&t->value, &d, 8);
      t->kind = Token::kFloat;
      t->is_double = true;
      return Status::Ok();
    }
    errno = 0;
    t->value = std::strtoull(t->text.c_str(), nullptr, 10);
    if (errno == ERANGE) return Error(t->pos, "integer constant too large");
    if (i_ < s_.size() && s_[i_] == 'U') ++i_;
    t->kind = Token::kInt;
    return Status::Ok();
  }

  std::string_view s_;
  size_t i_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

class Parser {
 public:
  Parser(std::string_view text, const ParseLimits& limits) : lex_(text), limits_(limits) {}

  Result<Module> Run() {
    GPUWASM_RETURN_IF_ERROR(Advance());
    while (tok_.kind != Token::kEnd) GPUWASM_RETURN_IF_ERROR(TopLevel());
    if (module_.version.empty()) return Status::InvalidArgument("missing .version directive");
    if (module_.target.empty()) return Status::InvalidArgument("missing .target directive");
    // Registers name their function's definition ordinal until here: definitions keep their order
    // (only prototypes are erased), so the k-th function with a body is ordinal k.
    std::vector<int> index_of;
    index_of.reserve(static_cast<size_t>(definitions_));
    for (size_t k = 0; k < module_.functions.size(); ++k) {
      if (module_.functions[k].has_body) index_of.push_back(static_cast<int>(k));
    }
    for (Register& r : module_.registers) r.function = index_of[static_cast<size_t>(r.function)];
    return std::move(module_);
  }

 private:
  Status Advance() { return lex_.Next(&tok_); }
  Status Error(const std::string& m) const { return Lexer::Error(tok_.pos, m); }
  Status ErrorAt(Position p, const std::string& m) const { return Lexer::Error(p, m); }
  bool IsPunct(char c) const { return tok_.kind == Token::kPunct && tok_.punct == c; }
  bool IsIdent(std::string_view s) const { return tok_.kind == Token::kIdent && tok_.text == s; }

  Status Expect(char c) {
    if (!IsPunct(c)) return Error(std::string("expected '") + c + "', found '" + tok_.text + "'");
    return Advance();
  }

  Result<uint64_t> ExpectInt() {
    if (tok_.kind != Token::kInt) return Error("expected an integer, found '" + tok_.text + "'");
    uint64_t v = tok_.value;
    GPUWASM_RETURN_IF_ERROR(Advance());
    return v;
  }

  Result<std::string> ExpectIdent(const char* what) {
    if (tok_.kind != Token::kIdent) return Error(std::string("expected ") + what + ", found '" + tok_.text + "'");
    std::string s = tok_.text;
    GPUWASM_RETURN_IF_ERROR(Advance());
    return s;
  }

  Status SkipBalancedBraces() {
    int depth = 0;
    do {
      if (tok_.kind == Token::kEnd) return Error("unterminated { } block");
      if (IsPunct('{')) ++depth;
      if (IsPunct('}')) --depth;
      GPUWASM_RETURN_IF_ERROR(Advance());
    } while (depth > 0);
    return Status::Ok();
  }

  Status TopLevel() {
    if (tok_.kind != Token::kIdent) return Error("unexpected '" + tok_.text + "' at module scope");
    const std::string d = tok_.text;
    if (d == ".version") {
      GPUWASM_RETURN_IF_ERROR(Advance());
      if (tok_.kind != Token::kFloat && tok_.kind != Token::kInt) return Error("expected a version number");
      module_.version = tok_.text;
      return Advance();
    }
    if (d == ".target") {
      GPUWASM_RETURN_IF_ERROR(Advance());
      GPUWASM_ASSIGN_OR_RETURN(module_.target, ExpectIdent("a target"));
      while (IsPunct(',')) {
        GPUWASM_RETURN_IF_ERROR(Advance());
        GPUWASM_ASSIGN_OR_RETURN(std::string option, ExpectIdent("a target option"));
        module_.target_options.push_back(std::move(option));
      }
      return Status::Ok();
    }
    if (d == ".address_size") {
      GPUWASM_RETURN_IF_ERROR(Advance());
      Position at = tok_.pos;
      GPUWASM_ASSIGN_OR_RETURN(uint64_t a, ExpectInt());
      if (a != 64) return ErrorAt(at, ".address_size " + std::to_string(a) + " is not supported (only 64)");
      module_.address_size = 64;
      return Status::Ok();
    }
    if (d == ".file" || d == ".loc") {
      lex_.SkipLine();
      return Advance();
    }
    if (d == ".section") {  // debug sections: skipped whole
      GPUWASM_RETURN_IF_ERROR(Advance());
      while (!IsPunct('{') && tok_.kind != Token::kEnd) GPUWASM_RETURN_IF_ERROR(Advance());
      return SkipBalancedBraces();
    }
    if (d == ".pragma") {
      GPUWASM_RETURN_IF_ERROR(Advance());
      if (tok_.kind == Token::kString) GPUWASM_RETURN_IF_ERROR(Advance());
      return Expect(';');
    }
    bool visible = false, is_extern = false;
    while (IsIdent(".visible") || IsIdent(".extern") || IsIdent(".weak") || IsIdent(".common")) {
      visible |= tok_.text == ".visible";
      is_extern |= tok_.text == ".extern";
      GPUWASM_RETURN_IF_ERROR(Advance());
    }
    if (IsIdent(".entry") || IsIdent(".func")) return FunctionDecl(visible, is_extern);
    if (IsIdent(".global") || IsIdent(".const") || IsIdent(".shared")) {
      GPUWASM_ASSIGN_OR_RETURN(Variable v, VariableDecl(is_extern));
      if (module_.FindGlobal(v.name) != nullptr) return ErrorAt(v.pos, "symbol '" + v.name + "' declared twice");
      module_.globals.push_back(std::move(v));
      return Status::Ok();
    }
    return Error("unknown or unsupported directive '" + tok_.text + "' at module scope");
  }

  // [.align N] .type name[N]? [= init] ;   (current token: the state space)
  Result<Variable> VariableDecl(bool is_extern) {
    Variable v;
    v.pos = tok_.pos;
    v.is_extern = is_extern;
    const std::string space = tok_.text;
    v.space = space == ".global"   ? Space::kGlobal
              : space == ".const"  ? Space::kConst
              : space == ".shared" ? Space::kShared
              : space == ".local"  ? Space::kLocal
                                   : Space::kParam;
    GPUWASM_RETURN_IF_ERROR(Advance());
    for (;;) {
      if (IsIdent(".align")) {
        GPUWASM_RETURN_IF_ERROR(Advance());
        GPUWASM_ASSIGN_OR_RETURN(uint64_t a, ExpectInt());
        if (a == 0 || a > 4096 || (a & (a - 1)) != 0) return Error(".align must be a power of two up to 4096");
        v.align = static_cast<uint32_t>(a);
      } else if (tok_.kind == Token::kIdent && tok_.text[0] == '.' && !ParseType(tok_.text)) {
        if (tok_.text == ".v2" || tok_.text == ".v4") return Error("vector variables are not supported");
        GPUWASM_RETURN_IF_ERROR(Advance());  // .ptr and other attributes
      } else {
        break;
      }
    }
    auto type = tok_.kind == Token::kIdent ? ParseType(tok_.text) : std::nullopt;
    if (!type) return Error("expected a type for variable, found '" + tok_.text + "'");
    v.type = *type;
    GPUWASM_RETURN_IF_ERROR(Advance());
    GPUWASM_ASSIGN_OR_RETURN(v.name, ExpectIdent("a variable name"));
    if (v.align == 0) v.align = std::max(1u, TypeSize(v.type));
    if (IsPunct('[')) {
      v.is_array = true;
      GPUWASM_RETURN_IF_ERROR(Advance());
      if (IsPunct(']')) {
        v.count = 0;
      } else {
        GPUWASM_ASSIGN_OR_RETURN(v.count, ExpectInt());
      }
      GPUWASM_RETURN_IF_ERROR(Expect(']'));
    }
    if (v.count > limits_.max_variable_bytes || v.size() > limits_.max_variable_bytes) {
      return ErrorAt(v.pos, "variable '" + v.name + "' is too large");
    }
    if (IsPunct('=')) {
      GPUWASM_RETURN_IF_ERROR(Advance());
      GPUWASM_RETURN_IF_ERROR(Initializer(&v));
    }
    GPUWASM_RETURN_IF_ERROR(Expect(';'));
    return v;
  }

  Status Initializer(Variable* v) {
    unsigned es = TypeSize(v->type);
    auto push = [&](uint64_t bits) {
      for (unsigned k = 0; k < es; ++k) v->init.push_back(static_cast<uint8_t>(bits >> (8 * k)));
    };
    auto value = [&]() -> Result<uint64_t> {
      bool neg = false;
      if (IsPunct('-')) {
        neg = true;
        GPUWASM_RETURN_IF_ERROR(Advance());
      }
      if (tok_.kind != Token::kInt && tok_.kind != Token::kFloat) return Error("expected a constant in initializer");
      uint64_t b = tok_.value;
      if (tok_.kind == Token::kFloat && v->type == Type::kF32 && tok_.is_double && tok_.text.rfind("0d", 0) != 0) {
        b = F64BitsToF32Bits(b);
      }
      GPUWASM_RETURN_IF_ERROR(Advance());
      return neg ? (~b + 1) : b;
    };
    if (IsPunct('{')) {
      GPUWASM_RETURN_IF_ERROR(Advance());
      while (!IsPunct('}')) {
        GPUWASM_ASSIGN_OR_RETURN(uint64_t b, value());
        push(b);
        if (v->init.size() > limits_.max_variable_bytes) return Error("initializer too large");
        if (IsPunct(','))
          GPUWASM_RETURN_IF_ERROR(Advance());
        else if (!IsPunct('}'))
          return Error("expected ',' or '}' in initializer");
      }
      GPUWASM_RETURN_IF_ERROR(Advance());
    } else {
      GPUWASM_ASSIGN_OR_RETURN(uint64_t b, value());
      push(b);
    }
    if (v->is_array && v->count == 0) v->count = v->init.size() / es;
    if (v->init.size() > v->size())
      return ErrorAt(v->pos, "initializer of '" + v->name + "' is larger than the variable");
    return Status::Ok();
  }

  Result<Param> ParamDecl(uint64_t* offset) {
    if (!IsIdent(".param") && !IsIdent(".reg")) return Error("expected .param, found '" + tok_.text + "'");
    Param p;
    p.is_reg = tok_.text == ".reg";
    GPUWASM_RETURN_IF_ERROR(Advance());
    for (;;) {
      if (IsIdent(".align")) {
        GPUWASM_RETURN_IF_ERROR(Advance());
        GPUWASM_ASSIGN_OR_RETURN(uint64_t a, ExpectInt());
        if (a == 0 || a > 256 || (a & (a - 1)) != 0) return Error(".align must be a power of two up to 256");
        p.align = static_cast<uint32_t>(a);
      } else if (IsIdent(".ptr") || IsIdent(".global") || IsIdent(".shared") || IsIdent(".const") ||
                 IsIdent(".local")) {
        GPUWASM_RETURN_IF_ERROR(Advance());
      } else {
        break;
      }
    }
    auto type = tok_.kind == Token::kIdent ? ParseType(tok_.text) : std::nullopt;
    if (!type || *type == Type::kPred) return Error("expected a parameter type, found '" + tok_.text + "'");
    p.type = *type;
    GPUWASM_RETURN_IF_ERROR(Advance());
    // A kernel pointer parameter's attributes (.param .u64 .ptr .global .align 16 p, as nvcc emits
    // for sm_100): the space and alignment of what it points to, not the parameter's own layout.
    if (IsIdent(".ptr")) {
      GPUWASM_RETURN_IF_ERROR(Advance());
      if (IsIdent(".global") || IsIdent(".shared") || IsIdent(".const") || IsIdent(".local")) {
        GPUWASM_RETURN_IF_ERROR(Advance());
      }
      if (IsIdent(".align")) {
        GPUWASM_RETURN_IF_ERROR(Advance());
        GPUWASM_ASSIGN_OR_RETURN(uint64_t a, ExpectInt());
        if (a == 0 || a > (uint64_t{1} << 31) || (a & (a - 1)) != 0) return Error(".align must be a power of two");
      }
    }
    GPUWASM_ASSIGN_OR_RETURN(p.name, ExpectIdent("a parameter name"));
    if (IsPunct('[')) {
      GPUWASM_RETURN_IF_ERROR(Advance());
      GPUWASM_ASSIGN_OR_RETURN(p.count, ExpectInt());
      GPUWASM_RETURN_IF_ERROR(Expect(']'));
      if (p.count == 0 || p.count > 4096) return Error("parameter array size out of range");
    }
    p.size = TypeSize(p.type) * p.count;
    if (p.align == 0) p.align = TypeSize(p.type);
    *offset = (*offset + p.align - 1) / p.align * p.align;
    p.offset = *offset;
    *offset += p.size;
    return p;
  }

  Status ParamList(std::vector<Param>* out, uint64_t* bytes) {
    GPUWASM_RETURN_IF_ERROR(Expect('('));
    uint64_t offset = 0;
    while (!IsPunct(')')) {
      GPUWASM_ASSIGN_OR_RETURN(Param p, ParamDecl(&offset));
      out->push_back(std::move(p));
      if (IsPunct(','))
        GPUWASM_RETURN_IF_ERROR(Advance());
      else if (!IsPunct(')'))
        return Error("expected ',' or ')' in parameter list");
    }
    if (bytes != nullptr) *bytes = offset;
    return Advance();
  }

  Status FunctionDecl(bool visible, bool is_extern) {
    Function f;
    f.pos = tok_.pos;
    f.visible = visible;
    f.is_entry = tok_.text == ".entry";
    GPUWASM_RETURN_IF_ERROR(Advance());
    if (!f.is_entry && IsPunct('(')) GPUWASM_RETURN_IF_ERROR(ParamList(&f.returns, nullptr));
    GPUWASM_ASSIGN_OR_RETURN(f.name, ExpectIdent("a function name"));
    if (module_.FindFunction(f.name) != nullptr) {
      // A prototype followed by its definition: keep the definition (where it is in the text).
      for (size_t k = 0; k < module_.functions.size(); ++k) {
        if (module_.functions[k].name == f.name && !module_.functions[k].has_body) {
          module_.functions.erase(module_.functions.begin() + static_cast<long>(k));
          break;
        }
      }
      if (module_.FindFunction(f.name) != nullptr) return ErrorAt(f.pos, "function '" + f.name + "' defined twice");
    }
    if (IsPunct('(')) GPUWASM_RETURN_IF_ERROR(ParamList(&f.params, &f.param_bytes));
    // Performance directives (newline-terminated in nvcc output; here simply token lists).
    while (tok_.kind == Token::kIdent && tok_.text[0] == '.') {
      std::string d = tok_.text;
      GPUWASM_RETURN_IF_ERROR(Advance());
      int k = 0;
      while (tok_.kind == Token::kInt) {
        if ((d == ".maxntid" || d == ".reqntid") && k < 3) f.maxntid[k] = static_cast<uint32_t>(tok_.value);
        ++k;
        GPUWASM_RETURN_IF_ERROR(Advance());
        if (IsPunct(',')) GPUWASM_RETURN_IF_ERROR(Advance());
      }
      if (d == ".noreturn") continue;
      if (d != ".maxntid" && d != ".reqntid" && d != ".minnctapersm" && d != ".maxnreg" && d != ".maxclusterrank" &&
          d != ".reqnctapercluster" && d != ".explicitcluster") {
        return Error("unsupported function directive '" + d + "'");
      }
    }
    if (IsPunct(';')) {
      f.has_body = false;
      if (!is_extern && f.is_entry) return Error("kernel '" + f.name + "' has no body");
      module_.functions.push_back(std::move(f));
      return Advance();
    }
    function_index_ = static_cast<int>(module_.functions.size());
    ++definitions_;
    module_.functions.push_back(Function{});
    scopes_.clear();
    scopes_.emplace_back();
    GPUWASM_RETURN_IF_ERROR(Expect('{'));
    Status s = Body(&f);
    if (!s.ok()) return s;
    statements_ += f.body.size() + f.layout.size();
    module_.functions[function_index_] = std::move(f);
    return Status::Ok();
  }

  Status DeclareRegisters(Function* f) {  // current token: the type after .reg
    if (IsIdent(".v2") || IsIdent(".v4")) return Error("vector registers are not supported");
    std::optional<Type> parsed = tok_.kind == Token::kIdent ? ParseType(tok_.text) : std::nullopt;
    if (!parsed) return Error("expected a register type, found '" + tok_.text + "'");
    const Type type = *parsed;  // a plain value: GCC -O3 sees it initialized on every path
    GPUWASM_RETURN_IF_ERROR(Advance());
    int names_event = -1;  // the layout event of this declaration's run of plain names
    for (;;) {
      Position p = tok_.pos;
      GPUWASM_ASSIGN_OR_RETURN(std::string name, ExpectIdent("a register name"));
      uint64_t count = 0;
      bool range = false;
      if (IsPunct('<')) {
        GPUWASM_RETURN_IF_ERROR(Advance());
        GPUWASM_ASSIGN_OR_RETURN(count, ExpectInt());
        GPUWASM_RETURN_IF_ERROR(Expect('>'));
        range = true;
      }
      if (count > limits_.max_registers - std::min<uint64_t>(module_.registers.size(), limits_.max_registers)) {
        return ErrorAt(p, "too many registers (at most " + std::to_string(limits_.max_registers) + " in the module)");
      }
      ScopeEvent e{ScopeEvent::Kind::kRegisters, static_cast<uint32_t>(f->body.size()),
                   static_cast<int>(module_.registers.size()), static_cast<uint32_t>(range ? count : 1), range};
      if (range) {
        scopes_.back().reserve(scopes_.back().size() + count);
        for (uint64_t k = 0; k < count; ++k) GPUWASM_RETURN_IF_ERROR(AddRegister(name + std::to_string(k), type, p));
      } else {
        GPUWASM_RETURN_IF_ERROR(AddRegister(name, type, p));
      }
      if (!range && names_event >= 0) {
        ++f->layout[static_cast<size_t>(names_event)].count;  // `a, b, c` of one .reg: one event
      } else if (e.count != 0) {
        if (!range) names_event = static_cast<int>(f->layout.size());
        f->layout.push_back(e);
      }
      if (range) names_event = -1;
      if (!IsPunct(',')) break;
      GPUWASM_RETURN_IF_ERROR(Advance());
    }
    return Expect(';');
  }

  Status AddRegister(const std::string& name, Type type, Position p) {
    auto& scope = scopes_.back();
    if (scope.count(name) != 0) return ErrorAt(p, "register " + name + " declared twice in one scope");
    scope[name] = static_cast<int>(module_.registers.size());
    module_.registers.push_back({name, type, definitions_ - 1});  // the owner's index: set in Run
    return Status::Ok();
  }

  int LookupRegister(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return -1;
  }

  Status Body(Function* f) {
    int depth = 0;
    for (;;) {
      if (f->body.size() + f->layout.size() + statements_ > limits_.max_statements) {  // { } pairs count too
        return Error("too many statements (more than " + std::to_string(limits_.max_statements) + " in the module)");
      }
      if (tok_.kind == Token::kEnd) return Error("unexpected end of input: function '" + f->name + "' is not closed");
      if (IsPunct('}')) {
        GPUWASM_RETURN_IF_ERROR(Advance());
        if (depth == 0) return Status::Ok();
        f->layout.push_back({ScopeEvent::Kind::kClose, static_cast<uint32_t>(f->body.size())});
        --depth;
        scopes_.pop_back();
        continue;
      }
      if (IsPunct('{')) {
        if (++depth > limits_.max_scope_depth) return Error("scopes nested too deeply");
        f->layout.push_back({ScopeEvent::Kind::kOpen, static_cast<uint32_t>(f->body.size())});
        scopes_.emplace_back();
        GPUWASM_RETURN_IF_ERROR(Advance());
        continue;
      }
      if (tok_.kind == Token::kIdent && tok_.text[0] == '.') {
        const std::string d = tok_.text;
        if (d == ".reg") {
          GPUWASM_RETURN_IF_ERROR(Advance());
          GPUWASM_RETURN_IF_ERROR(DeclareRegisters(f));
        } else if (d == ".loc" || d == ".file") {
          lex_.SkipLine();
          GPUWASM_RETURN_IF_ERROR(Advance());
        } else if (d == ".pragma") {
          GPUWASM_RETURN_IF_ERROR(Advance());
          if (tok_.kind == Token::kString) GPUWASM_RETURN_IF_ERROR(Advance());
          GPUWASM_RETURN_IF_ERROR(Expect(';'));
        } else if (d == ".shared" || d == ".local" || d == ".param" || d == ".global" || d == ".const") {
          Statement st;
          st.kind = Statement::Kind::kVariable;
          st.scope = depth;
          GPUWASM_ASSIGN_OR_RETURN(st.var, VariableDecl(false));
          f->body.push_back(std::move(st));
        } else {
          return Error("unknown or unsupported directive '" + d + "' in function body");
        }
        continue;
      }
      // label:
      if (tok_.kind == Token::kIdent && tok_.text[0] != '%') {
        Token save = tok_;
        Lexer save_lex = lex_;
        GPUWASM_RETURN_IF_ERROR(Advance());
        if (IsPunct(':')) {
          Statement st;
          st.kind = Statement::Kind::kLabel;
          st.label = save.text;
          st.inst.pos = save.pos;
          st.scope = depth;
          f->body.push_back(std::move(st));
          GPUWASM_RETURN_IF_ERROR(Advance());
          continue;
        }
        tok_ = save;
        lex_ = save_lex;
      }
      Statement st;
      st.scope = depth;
      GPUWASM_RETURN_IF_ERROR(InstructionStmt(&st.inst));
      f->body.push_back(std::move(st));
    }
  }

  Status InstructionStmt(Instruction* in) {
    in->pos = tok_.pos;
    const size_t start = lex_.offset();
    if (IsPunct('@')) {
      GPUWASM_RETURN_IF_ERROR(Advance());
      if (IsPunct('!')) {
        in->guard_negated = true;
        GPUWASM_RETURN_IF_ERROR(Advance());
      }
      Position p = tok_.pos;
      GPUWASM_ASSIGN_OR_RETURN(std::string g, ExpectIdent("a predicate register"));
      in->guard = LookupRegister(g);
      if (in->guard < 0) return ErrorAt(p, "undefined register " + g);
    }
    in->pos = tok_.pos;
    GPUWASM_ASSIGN_OR_RETURN(std::string op, ExpectIdent("an instruction"));
    size_t dot = op.find('.');
    in->opcode = op.substr(0, dot);
    while (dot != std::string::npos) {
      size_t next = op.find('.', dot + 1);
      in->modifiers.push_back(op.substr(dot + 1, next == std::string::npos ? std::string::npos : next - dot - 1));
      dot = next;
    }
    if (in->modifiers.size() > 16) return Error("too many modifiers in '" + op.substr(0, 64) + "'");
    size_t operands = 0;
    while (!IsPunct(';')) {
      if (tok_.kind == Token::kEnd) return Error("missing ';' after " + op);
      if (lex_.offset() - start > limits_.max_statement_bytes) {
        return Error("instruction longer than " + std::to_string(limits_.max_statement_bytes) + " bytes");
      }
      Operand o;
      GPUWASM_RETURN_IF_ERROR(ParseOperand(&o));
      operands += 1 + o.elements.size();
      if (operands > limits_.max_operands) {
        return Error("too many operands for " + op + " (at most " + std::to_string(limits_.max_operands) + ")");
      }
      in->operands.push_back(std::move(o));
      if (IsPunct(','))
        GPUWASM_RETURN_IF_ERROR(Advance());
      else if (!IsPunct(';'))
        return Error("expected ',' or ';' after an operand of " + op + ", found '" + tok_.text + "'");
    }
    return Advance();
  }

  Status NameOperand(const std::string& name, Position p, Operand* o) {
    o->pos = p;
    if (name == "_") {
      o->kind = Operand::Kind::kSink;
      return Status::Ok();
    }
    int r = LookupRegister(name);
    if (r >= 0) {
      o->kind = Operand::Kind::kRegister;
      o->reg = r;
      return Status::Ok();
    }
    // A video instruction's operand selector or destination mask: %r.b0, %r.h10, %r.b3210.
    if (size_t dot = name.rfind('.'); dot != std::string::npos && name.size() - dot >= 3 && name.size() - dot <= 6 &&
                                      (name[dot + 1] == 'b' || name[dot + 1] == 'h') &&
                                      name.find_first_not_of("01234567", dot + 2) == std::string::npos) {
      if (int base = LookupRegister(name.substr(0, dot)); base >= 0) {
        o->kind = Operand::Kind::kRegister;
        o->reg = base;
        o->select = name.substr(dot + 1);
        return Status::Ok();
      }
    }
    if (name == "WARP_SZ") {  // the PTX ISA's predefined constant (every use of warpSize)
      o->kind = Operand::Kind::kImmediate;
      o->imm_bits = 32;
      return Status::Ok();
    }
    if (name[0] == '%') {
      // The special registers of the PTX ISA (section "Special Registers"); %pm<n>, %envreg<n>
      // and %reserved_smem_offset_<n> by prefix.
      static const char* kSpecials[] = {"%tid",
                                        "%ntid",
                                        "%ctaid",
                                        "%nctaid",
                                        "%laneid",
                                        "%warpid",
                                        "%nwarpid",
                                        "%smid",
                                        "%nsmid",
                                        "%gridid",
                                        "%clock",
                                        "%clock_hi",
                                        "%clock64",
                                        "%lanemask_eq",
                                        "%lanemask_le",
                                        "%lanemask_lt",
                                        "%lanemask_ge",
                                        "%lanemask_gt",
                                        "%dynamic_smem_size",
                                        "%total_smem_size",
                                        "%aggr_smem_size",
                                        "%globaltimer",
                                        "%globaltimer_lo",
                                        "%globaltimer_hi",
                                        "%is_explicit_cluster",
                                        "%clusterid",
                                        "%nclusterid",
                                        "%cluster_ctaid",
                                        "%cluster_nctaid",
                                        "%cluster_ctarank",
                                        "%cluster_nctarank",
                                        "%reserved_smem_offset_begin",
                                        "%reserved_smem_offset_end",
                                        "%reserved_smem_offset_cap",
                                        "%current_graph_exec"};
      std::string base = name.substr(0, name.find('.'));
      auto numbered = [&](std::string_view prefix, int limit) {
        if (base.size() <= prefix.size() || base.compare(0, prefix.size(), prefix) != 0) return false;
        std::string_view rest = std::string_view(base).substr(prefix.size());
        if (rest.ends_with("_64")) rest.remove_suffix(3);
        if (rest.empty() || rest.size() > 2) return false;
        int n = 0;
        for (char c : rest) {
          if (c < '0' || c > '9') return false;
          n = n * 10 + (c - '0');
        }
        return n < limit;
      };
      if (numbered("%pm", 8) || numbered("%envreg", 32) || numbered("%reserved_smem_offset_", 2)) {
        o->kind = Operand::Kind::kSpecial;
        o->symbol = name;
        return Status::Ok();
      }
      for (const char* s : kSpecials) {
        if (base == s) {
          o->kind = Operand::Kind::kSpecial;
          o->symbol = name;
          return Status::Ok();
        }
      }
      return ErrorAt(p, "undefined register " + name);
    }
    o->kind = Operand::Kind::kSymbol;  // symbol or label: resolved by the validator
    o->symbol = name;
    return Status::Ok();
  }

  // `depth`: 0 at the top, 1 in an operand list, 2 after '!': a list holds no list and '!' no '!'
  // (no recursion without bound).
  Status ParseOperand(Operand* o, int depth = 0) {
    o->pos = tok_.pos;
    if (IsPunct('!')) {
      if (depth >= 2) return Error("unexpected '!'");
      GPUWASM_RETURN_IF_ERROR(Advance());
      GPUWASM_RETURN_IF_ERROR(ParseOperand(o, 2));
      if (o->kind != Operand::Kind::kRegister) return ErrorAt(o->pos, "'!' applies to predicate registers only");
      o->negate = true;
      return Status::Ok();
    }
    if (IsPunct('[')) {
      GPUWASM_RETURN_IF_ERROR(Advance());
      o->kind = Operand::Kind::kAddress;
      if (tok_.kind == Token::kIdent) {
        Operand base;
        GPUWASM_RETURN_IF_ERROR(NameOperand(tok_.text, tok_.pos, &base));
        if (base.kind == Operand::Kind::kRegister)
          o->reg = base.reg;
        else if (base.kind == Operand::Kind::kSymbol)
          o->symbol = base.symbol;
        else
          return Error("unsupported address base '" + tok_.text + "'");
        GPUWASM_RETURN_IF_ERROR(Advance());
        if (IsPunct('+') || IsPunct('-')) {
          bool neg = IsPunct('-');
          GPUWASM_RETURN_IF_ERROR(Advance());
          if (IsPunct('-')) {
            neg = !neg;
            GPUWASM_RETURN_IF_ERROR(Advance());
          }
          GPUWASM_ASSIGN_OR_RETURN(uint64_t off, ExpectInt());
          o->offset = static_cast<int64_t>(neg ? 0 - off : off);  // wraps, as the hardware's add
        }
      } else {
        bool neg = false;
        if (IsPunct('-')) {
          neg = true;
          GPUWASM_RETURN_IF_ERROR(Advance());
        }
        GPUWASM_ASSIGN_OR_RETURN(uint64_t off, ExpectInt());
        o->offset = static_cast<int64_t>(neg ? 0 - off : off);
      }
      return Expect(']');
    }
    if (IsPunct('{') || IsPunct('(')) {
      if (depth != 0) return Error("operand lists do not nest");
      char close = IsPunct('{') ? '}' : ')';
      GPUWASM_RETURN_IF_ERROR(Advance());
      o->kind = Operand::Kind::kVector;
      while (!IsPunct(close)) {
        Operand e;
        GPUWASM_RETURN_IF_ERROR(ParseOperand(&e, 1));
        o->elements.push_back(std::move(e));
        if (o->elements.size() > 64) return Error("operand list too long");
        if (IsPunct(','))
          GPUWASM_RETURN_IF_ERROR(Advance());
        else if (!IsPunct(close))
          return Error(std::string("expected ',' or '") + close + "' in operand list");
      }
      return Advance();
    }
    bool neg = false;
    if (IsPunct('-')) {
      neg = true;
      GPUWASM_RETURN_IF_ERROR(Advance());
    }
    if (tok_.kind == Token::kInt) {
      o->kind = Operand::Kind::kImmediate;
      o->imm_bits = neg ? ~tok_.value + 1 : tok_.value;
      return Advance();
    }
    if (tok_.kind == Token::kFloat) {
      o->kind = Operand::Kind::kImmediate;
      o->imm_float = !tok_.is_double;
      o->imm_double = tok_.is_double;
      o->imm_bits = tok_.value;
      if (neg) o->imm_bits ^= tok_.is_double ? (1ull << 63) : (1ull << 31);
      return Advance();
    }
    if (tok_.kind != Token::kIdent) {
      return Error(neg ? "expected a number or register after '-'" : "expected an operand, found '" + tok_.text + "'");
    }
    GPUWASM_RETURN_IF_ERROR(NameOperand(tok_.text, tok_.pos, o));
    if (neg && o->kind != Operand::Kind::kRegister) return ErrorAt(o->pos, "'-' applies to numbers and registers only");
    o->minus = neg;
    GPUWASM_RETURN_IF_ERROR(Advance());
    if (IsPunct('|')) {  // dual destination: a|p
      GPUWASM_RETURN_IF_ERROR(Advance());
      Position p = tok_.pos;
      GPUWASM_ASSIGN_OR_RETURN(std::string second, ExpectIdent("a predicate register"));
      o->reg2 = LookupRegister(second);
      if (o->reg2 < 0) return ErrorAt(p, "undefined register " + second);
    }
    return Status::Ok();
  }

  Lexer lex_;
  Token tok_;
  ParseLimits limits_;
  size_t statements_ = 0;  // in the functions parsed so far
  Module module_;
  std::vector<std::unordered_map<std::string, int>> scopes_;
  int function_index_ = -1;
  int definitions_ = 0;  // functions with a body so far (erasing prototypes moves the later ones)
};

}  // namespace

Result<Module> Parse(std::string_view text, const ParseLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Status::InvalidArgument("PTX text of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                                   std::to_string(limits.max_bytes));
  }
  Parser p(text, limits);
  GPUWASM_ASSIGN_OR_RETURN(Module m, p.Run());
  GPUWASM_RETURN_IF_ERROR(Validate(m));
  return m;
}

}  // namespace gpuwasm::ptx
