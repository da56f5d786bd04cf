#include "wasm/split.h"

#include <algorithm>

namespace gpuwasm::wasm {
namespace {

constexpr std::string_view kStatic = "static ";
constexpr std::string_view kHidden = "__attribute__((visibility(\"hidden\"))) ";
constexpr std::string_view kFuncTypes = "static u32 func_types[";

enum class LineKind { kOther, kDeclaration, kDefinition, kFuncTypes };

// wasm2c's functions: "static [struct S ]T w2c_NAME(Z_<module>_instance_t*...", a declaration
// when the line ends ");", a definition when it ends ") {".
LineKind Classify(std::string_view line) {
  if (!line.starts_with(kStatic)) return LineKind::kOther;
  if (line.starts_with(kFuncTypes)) return LineKind::kFuncTypes;
  size_t paren = line.find('(');
  if (paren == std::string_view::npos) return LineKind::kOther;
  size_t space = line.rfind(' ', paren);
  if (space == std::string_view::npos || !line.substr(space + 1, paren - space - 1).starts_with("w2c_")) {
    return LineKind::kOther;
  }
  std::string_view args = line.substr(paren + 1);
  size_t type_end = args.find("_instance_t*");
  if (!args.starts_with("Z_") || type_end == std::string_view::npos ||
      args.substr(0, type_end).find(' ') != std::string_view::npos) {
    return LineKind::kOther;
  }
  if (line.ends_with(");")) return LineKind::kDeclaration;
  if (line.ends_with(") {")) return LineKind::kDefinition;
  return LineKind::kOther;
}

void AppendHidden(std::string& out, std::string_view line) {
  out += kHidden;
  out += line.substr(kStatic.size());
  out += '\n';
}

struct Definition {
  size_t first_line, last_line;  // inclusive; last_line is the closing "}"
  size_t bytes;
};

}  // namespace

std::vector<std::string> SplitTranslation(std::string_view c, size_t parts) {
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < c.size();) {
    size_t end = c.find('\n', at);
    if (end == std::string_view::npos) end = c.size();
    lines.push_back(c.substr(at, end - at));
    at = end + 1;
  }
  std::vector<LineKind> kinds(lines.size());
  size_t first_declaration = lines.size();
  std::vector<Definition> definitions;
  for (size_t i = 0; i < lines.size(); ++i) {
    kinds[i] = Classify(lines[i]);
    if (kinds[i] == LineKind::kDeclaration) first_declaration = std::min(first_declaration, i);
    if (kinds[i] != LineKind::kDefinition) continue;
    Definition d{i, i, 0};
    while (d.last_line + 1 < lines.size() && lines[d.last_line] != "}") ++d.last_line;
    if (lines[d.last_line] != "}") return {std::string(c)};  // not wasm2c's shape: an unterminated function
    d.bytes = static_cast<size_t>(lines[d.last_line].data() - lines[i].data()) + 2;
    definitions.push_back(d);
    i = d.last_line;
  }
  parts = std::min(parts, definitions.size());
  if (parts <= 1 || first_declaration == lines.size()) return {std::string(c)};

  // Consecutive functions per part (neighbours call each other); part 0's other text counts
  // towards its size, so it takes fewer functions.
  size_t moved_bytes = 0;
  for (const Definition& d : definitions) moved_bytes += d.bytes;
  const size_t target = c.size() / parts + 1;
  std::vector<size_t> part_of(definitions.size(), 0);
  size_t part = 0, size = c.size() - moved_bytes;
  for (size_t k = 0; k < definitions.size(); ++k) {
    if (size >= target && part + 1 < parts) {
      ++part;
      size = 0;
    }
    part_of[k] = part;
    size += definitions[k].bytes;
  }
  parts = part + 1;

  std::string shared;  // what every part but 0 starts with: the prelude and every declaration
  for (size_t i = 0; i < first_declaration; ++i) {
    if (kinds[i] == LineKind::kFuncTypes) {
      shared += "extern ";
      AppendHidden(shared, lines[i]);
    } else {
      shared += lines[i];
      shared += '\n';
    }
  }
  for (size_t i = first_declaration; i < lines.size(); ++i) {
    if (kinds[i] == LineKind::kDeclaration) AppendHidden(shared, lines[i]);
  }

  std::vector<std::string> out(parts);
  for (size_t p = 1; p < parts; ++p) out[p] = shared;
  out[0].reserve(c.size() - moved_bytes + c.size() / parts);
  size_t next_definition = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (next_definition < definitions.size() && definitions[next_definition].first_line == i) {
      const Definition& d = definitions[next_definition];
      std::string& to = out[part_of[next_definition]];
      AppendHidden(to, lines[i]);
      std::string_view body(lines[i + 1].data(),
                            static_cast<size_t>(lines[d.last_line].data() - lines[i + 1].data()) + 1);
      to += body;
      to += "\n\n";
      i = d.last_line;
      ++next_definition;
      continue;
    }
    if (kinds[i] == LineKind::kDeclaration || kinds[i] == LineKind::kFuncTypes) {
      AppendHidden(out[0], lines[i]);
    } else {
      out[0] += lines[i];
      out[0] += '\n';
    }
  }
  return out;
}

}  // namespace gpuwasm::wasm
