// Parsing PTX text (as nvcc 12/13 emits it) into a Module, then validating it.
//
// Errors carry "line L, column C: ..." and name what is wrong. Both functions are pure and
// thread-safe. The input is untrusted: sizes, counts and nesting are bounded (ParseLimits).
#pragma once

#include <string_view>

#include "common/status.h"
#include "ptx/ast.h"

namespace gpuwasm::ptx {

struct ParseLimits {
  size_t max_bytes = 16 << 20;            // PTX text
  size_t max_statements = 1 << 19;        // all functions together
  size_t max_operands = 32;               // of one instruction (a vector operand counts its elements)
  size_t max_statement_bytes = 64 << 10;  // text of one instruction, from its guard to its ';'
  uint64_t max_registers = 1 << 18;       // declared registers (all functions; nvcc's biggest use thousands)
  uint64_t max_variable_bytes = 256 << 20;
  int max_scope_depth = 64;
};

// Parses and validates (Validate below). The result is safe to hand to a device.
Result<Module> Parse(std::string_view text, const ParseLimits& limits = {});

// Checks a parsed module: labels and symbols resolve, operand counts and register types agree
// with each instruction's type, predicates guard with .pred registers, kernels have bodies.
// Unknown opcodes are reported by name and position.
Status Validate(const Module& module);

}  // namespace gpuwasm::ptx
