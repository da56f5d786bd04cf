// The definitions of ast.h: type sizes, names and classes, float bit conversions, lookups.
#include "ptx/ast.h"

#include <cstring>

namespace gpuwasm::ptx {

unsigned TypeSize(Type t) {
  switch (t) {
    case Type::kB8:
    case Type::kU8:
    case Type::kS8:
    case Type::kPred: return 1;
    case Type::kB16:
    case Type::kU16:
    case Type::kS16:
    case Type::kF16:
    case Type::kBF16: return 2;
    case Type::kB32:
    case Type::kU32:
    case Type::kS32:
    case Type::kF32:
    case Type::kF16x2:
    case Type::kBF16x2: return 4;
    case Type::kB64:
    case Type::kU64:
    case Type::kS64:
    case Type::kF64: return 8;
    case Type::kB128: return 16;
    case Type::kNone: return 0;
  }
  return 0;
}

uint64_t F64BitsToF32Bits(uint64_t f64_bits) {
  double d;
  std::memcpy(&d, &f64_bits, 8);
  float f = static_cast<float>(d);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint64_t F32BitsToF64Bits(uint64_t f32_bits) {
  uint32_t u = static_cast<uint32_t>(f32_bits);
  float f;
  std::memcpy(&f, &u, 4);
  double d = f;
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  return bits;
}

bool IsFloat(Type t) {
  return t == Type::kF16 || t == Type::kF16x2 || t == Type::kBF16 || t == Type::kBF16x2 || t == Type::kF32 ||
         t == Type::kF64;
}

bool IsSigned(Type t) { return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64; }

namespace {
struct TypeEntry {
  const char* name;
  Type type;
};
constexpr TypeEntry kTypes[] = {
    {".b8", Type::kB8},   {".b16", Type::kB16},     {".b32", Type::kB32},   {".b64", Type::kB64},
    {".u8", Type::kU8},   {".u16", Type::kU16},     {".u32", Type::kU32},   {".u64", Type::kU64},
    {".s8", Type::kS8},   {".s16", Type::kS16},     {".s32", Type::kS32},   {".s64", Type::kS64},
    {".f16", Type::kF16}, {".f16x2", Type::kF16x2}, {".bf16", Type::kBF16}, {".bf16x2", Type::kBF16x2},
    {".f32", Type::kF32}, {".f64", Type::kF64},     {".pred", Type::kPred}, {".b128", Type::kB128},
};
}  // namespace

const char* TypeName(Type t) {
  for (const TypeEntry& e : kTypes) {
    if (e.type == t) return e.name;
  }
  return ".none";
}

std::optional<Type> ParseType(std::string_view dotted) {
  for (const TypeEntry& e : kTypes) {
    if (dotted == e.name) return e.type;
  }
  return std::nullopt;
}

std::string Instruction::text() const {
  std::string s = opcode;
  for (const std::string& m : modifiers) s += "." + m;
  return s;
}

const Function* Module::FindFunction(std::string_view name) const {
  for (const Function& f : functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const Variable* Module::FindGlobal(std::string_view name) const {
  for (const Variable& v : globals) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

}  // namespace gpuwasm::ptx
