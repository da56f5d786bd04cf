// Printing a PTX syntax tree back to text that the parser, ptxas and the driver's JIT accept, and
// comparing two trees.
//
// Print keeps everything the tree holds: every declaration in its { } scope (Function::layout),
// registers in index order (so parsing the text again numbers them the same), labels, guards,
// modifiers and operands as parsed. What the parser drops is not printed: comments, .loc/.file
// and debug sections, .pragma, and the performance directives other than .maxntid (printed as
// .maxntid; .reqntid is read as it). Parse(Print(m)) gives m again, positions aside (Diff).
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "ptx/ast.h"

namespace gpuwasm::ptx {

struct PrintOptions {
  // Each body statement on the line it had in the source text where the text allows (padding
  // with empty lines): a device reporting "PTX line N" for printed text then names the line of
  // the text the guest wrote. Statements a pass added share their instruction's line.
  bool keep_lines = false;
};

std::string Print(const Module& module, const PrintOptions& options = {});

// "" when `a` and `b` are the same tree (source positions are not compared); otherwise where they
// first differ ("function 'k' statement 12: operand 1 differs").
std::string Diff(const Module& a, const Module& b);

}  // namespace gpuwasm::ptx
