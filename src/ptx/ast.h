// The PTX syntax tree: what the parser produces from nvcc's output and every consumer reads.
//
// A Module holds module-scope variables (.global/.const/.shared with optional initialisers,
// .extern .shared) and functions (.entry kernels and .func device functions). Registers are
// resolved by the parser: every operand names a Register by index, so scoped declarations
// ({ .reg .b32 c; }) never clash. Positions are 1-based line and column of the source text.
//
// Thread-safety: immutable after parsing; share freely.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuwasm::ptx {

// Scalar types of PTX (.b8 ... .pred). Vector types are expressed by Instruction::vec.
enum class Type : uint8_t {
  kNone,
  kB8,
  kB16,
  kB32,
  kB64,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF16x2,
  kBF16,
  kBF16x2,
  kF32,
  kF64,
  kPred,
  kB128,  // registers and operands of mov, ld/st and atom exch/cas (sm_90)
};

// The f32 bit pattern of a constant written as a double (decimal literals are parsed as f64),
// rounded to nearest; and the f64 pattern of an f32 one (0fXXXXXXXX used with an f64 instruction).
uint64_t F64BitsToF32Bits(uint64_t f64_bits);
uint64_t F32BitsToF64Bits(uint64_t f32_bits);

// Size in bytes (pred: 1, none: 0).
unsigned TypeSize(Type t);
bool IsFloat(Type t);
bool IsSigned(Type t);
const char* TypeName(Type t);                            // ".u32"
std::optional<Type> ParseType(std::string_view dotted);  // ".u32" -> kU32

enum class Space : uint8_t { kNone, kGlobal, kShared, kLocal, kConst, kParam, kGeneric };

struct Position {
  int line = 0;
  int col = 0;
};

struct Register {
  std::string name;  // as written ("%r12", "c")
  Type type = Type::kNone;
  int function = -1;  // owning function index
};

struct Operand {
  enum class Kind : uint8_t {
    kRegister,   // reg
    kImmediate,  // imm_bits, imm_is_float, imm_is_double
    kAddress,    // [reg + offset] / [symbol + offset] / [offset]
    kVector,     // {a, b, ...}: elements in `elements`
    kSymbol,     // a variable, function or parameter name used as a value
    kLabel,      // branch target
    kSpecial,    // %tid.x ... : name in `symbol`
    kSink,       // "_" (discarded destination)
  };
  Kind kind = Kind::kRegister;
  int reg = -1;             // register index, or the address base register (-1: none)
  std::string symbol;       // symbol/label/special name, or the address base symbol
  int64_t offset = 0;       // address offset
  uint64_t imm_bits = 0;    // immediate value (floats as their IEEE bits)
  bool imm_float = false;   // 0fXXXXXXXX or decimal float: f32 bits in imm_bits
  bool imm_double = false;  // 0dXXXXXXXXXXXXXXXX: f64 bits
  bool negate = false;      // !%p (predicate operand negation)
  bool minus = false;       // -%r (a negated register: vmad's operands)
  std::string select;       // video operand selector or destination mask, without the dot
                            // ("b0", "h1", "h10", "b3210"); empty: none
  std::vector<Operand> elements;
  int reg2 = -1;  // dual destination "a|p": the second register
  Position pos;
};

struct Instruction {
  int guard = -1;                      // predicate register guarding execution (-1: none)
  bool guard_negated = false;          // @!%p
  std::string opcode;                  // "ld"
  std::vector<std::string> modifiers;  // {"global", "nc", "f32"}
  std::vector<Operand> operands;
  Position pos;
  std::string text() const;  // "ld.global.nc.f32"
};

struct Variable {
  std::string name;
  Space space = Space::kNone;
  Type type = Type::kNone;
  uint32_t align = 0;
  uint64_t count = 1;  // array elements (0 for extern/unsized arrays)
  bool is_array = false;
  bool is_extern = false;
  std::vector<uint8_t> init;  // initial bytes (empty: zero)
  Position pos;
  uint64_t size() const { return TypeSize(type) * count; }
};

struct Param {
  std::string name;
  bool is_reg = false;  // declared .reg (a .func's register parameter) rather than .param
  Type type = Type::kNone;
  uint32_t align = 0;
  uint64_t count = 1;   // .b8 name[16] style
  uint64_t size = 0;    // bytes
  uint64_t offset = 0;  // offset in the kernel's parameter buffer
  bool is_pointer_sized() const { return size == 8; }
};

struct Statement {
  enum class Kind : uint8_t { kInstruction, kLabel, kVariable };
  Kind kind = Kind::kInstruction;
  Instruction inst;
  std::string label;
  Variable var;   // .shared/.local/.param declared in the body
  int scope = 0;  // nesting depth of { } (0: function body)
};

// Where the body's { } scopes and register declarations were, so that the text can be printed
// again with every declaration in its scope (Print in printer.h). `at`: the index of the body
// statement the event precedes (body.size(): after the last one).
struct ScopeEvent {
  enum class Kind : uint8_t { kOpen, kClose, kRegisters };
  Kind kind = Kind::kOpen;
  uint32_t at = 0;
  int first_reg = -1;  // kRegisters: the first register declared, then count in index order
  uint32_t count = 0;
  bool range = false;  // declared as name<count> (names name0 ... name{count-1})
};

struct Function {
  std::string name;
  bool is_entry = false;  // .entry (kernel) or .func
  bool visible = false;
  std::vector<Param> params;   // in order, with offsets
  std::vector<Param> returns;  // .func return parameters
  uint64_t param_bytes = 0;    // size of the kernel parameter buffer
  uint32_t maxntid[3] = {0, 0, 0};
  bool has_body = true;  // false for .extern .func prototypes
  std::vector<Statement> body;
  std::vector<ScopeEvent> layout;  // in text order
  Position pos;
};

struct Module {
  std::string version;                      // "9.0"
  std::string target;                       // "sm_80"
  std::vector<std::string> target_options;  // ".target sm_80, texmode_independent": the rest
  int address_size = 64;
  std::vector<Variable> globals;
  std::vector<Function> functions;
  std::vector<Register> registers;  // every register of every function, by index

  const Function* FindFunction(std::string_view name) const;
  const Variable* FindGlobal(std::string_view name) const;
};

}  // namespace gpuwasm::ptx
