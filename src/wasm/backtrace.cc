#include "wasm/backtrace.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <unordered_map>

namespace gpuwasm::wasm {

std::string TrapFrame::Display() const {
  return name.empty() ? "wasm-function[" + std::to_string(function_index) + "]" : name;
}

namespace {

// Reads the LEB128 and byte strings of a wasm binary; any overrun sets ok = false and every
// later read returns nothing.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  uint32_t U32() {
    uint32_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (!ok || p == end) break;
      uint8_t b = *p++;
      v |= static_cast<uint32_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  uint8_t Byte() {
    if (!ok || p == end) {
      ok = false;
      return 0;
    }
    return *p++;
  }
  // The next n bytes as a cursor of their own, skipped here.
  Cursor Take(uint32_t n) {
    if (!ok || static_cast<size_t>(end - p) < n) {
      ok = false;
      return Cursor{end, end, false};
    }
    Cursor sub{p, p + n};
    p += n;
    return sub;
  }
  std::string_view View() const { return {reinterpret_cast<const char*>(p), static_cast<size_t>(end - p)}; }
};

// A Rust legacy symbol demangles to "path::h<16 hex digits>": the hash only adds noise. True when
// it was there (the name is Rust's).
bool StripRustHash(std::string* s) {
  constexpr size_t kHash = 3 + 16;  // "::h" + digits
  if (s->size() <= kHash || s->compare(s->size() - kHash, 3, "::h") != 0) return false;
  for (size_t i = s->size() - 16; i < s->size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>((*s)[i]))) return false;
  }
  s->resize(s->size() - kHash);
  return true;
}

// Rust legacy mangling spells punctuation as $..$ escapes ("$LT$" is '<', "$u7b$" is '{') and
// "::" inside a component as ".."; a component that starts with an escape gets a '_' before it.
std::string UnescapeRust(std::string_view s) {
  static constexpr std::pair<std::string_view, char> kEscapes[] = {{"$SP$", '@'}, {"$BP$", '*'}, {"$RF$", '&'},
                                                                   {"$LT$", '<'}, {"$GT$", '>'}, {"$LP$", '('},
                                                                   {"$RP$", ')'}, {"$C$", ','}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '_' && i + 1 < s.size() && s[i + 1] == '$' && (i == 0 || s[i - 1] == ':')) {
      ++i;
      continue;
    }
    if (s.compare(i, 2, "..") == 0) {
      out += "::";
      i += 2;
      continue;
    }
    if (s[i] == '$') {
      bool matched = false;
      for (const auto& [escape, c] : kEscapes) {
        if (s.compare(i, escape.size(), escape) == 0) {
          out += c;
          i += escape.size();
          matched = true;
          break;
        }
      }
      size_t end = s.find('$', i + 1);
      if (!matched && s.compare(i, 2, "$u") == 0 && end != std::string_view::npos && end - i <= 4) {
        unsigned v = 0;
        bool hex = end > i + 2;
        for (size_t k = i + 2; k < end; ++k) {
          hex = hex && std::isxdigit(static_cast<unsigned char>(s[k]));
          v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(s[k])) ? s[k] - '0'
                                                                                            : (s[k] | 0x20) - 'a' + 10);
        }
        if (hex && v >= 0x20 && v < 0x7f) {
          out += static_cast<char>(v);
          i = end + 1;
          matched = true;
        }
      }
      if (matched) continue;
    }
    out += s[i++];
  }
  return out;
}

std::string PrintableName(std::string_view raw) {
  std::string name(raw.substr(0, 1024));
  // Demangling runs where the name section is read: the translator child, under its limits.
  if (name.size() > 2 && name.compare(0, 2, "_Z") == 0) {
    // LLVM's ".llvm.<digits>" suffix (a function made local by LTO) is not Itanium grammar.
    if (size_t llvm = name.find(".llvm."); llvm != std::string::npos) name.resize(llvm);
    int status = 0;
    char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status == 0 && d != nullptr) {
      name = d;
      if (StripRustHash(&name)) name = UnescapeRust(name);
    }
    std::free(d);
  }
  for (char& c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  if (name.size() > kMaxFunctionNameBytes) name = name.substr(0, kMaxFunctionNameBytes - 3) + "...";
  return name;
}

}  // namespace

std::vector<FunctionName> ReadFunctionNames(std::span<const uint8_t> wasm) {
  std::vector<FunctionName> names;
  if (wasm.size() < 8) return names;
  Cursor module{wasm.data() + 8, wasm.data() + wasm.size()};
  while (module.ok && module.p != module.end) {
    uint8_t id = module.Byte();
    uint32_t size = module.U32();
    Cursor section = module.Take(size);
    if (!section.ok || id != 0) continue;
    uint32_t name_len = section.U32();
    if (section.Take(name_len).View() != "name" || !section.ok) continue;
    size_t bytes = 0;
    while (section.ok && section.p != section.end) {
      uint8_t sub_id = section.Byte();
      Cursor sub = section.Take(section.U32());
      if (sub_id != 1) continue;
      uint32_t count = sub.U32();
      for (uint32_t i = 0; i < count && sub.ok; ++i) {
        uint32_t index = sub.U32();
        Cursor name = sub.Take(sub.U32());
        if (!sub.ok) break;
        std::string printable = PrintableName(name.View());
        bytes += printable.size() + 12;
        if (bytes > kMaxFunctionNamesBytes) return names;
        names.push_back({index, std::move(printable)});
      }
      return names;  // one function-names subsection
    }
    return names;  // one name section
  }
  return names;
}

std::string FormatModuleNames(const ModuleNames& names) {
  std::string s;
  for (const FunctionName& n : names.functions) s += std::to_string(n.index) + "\t" + n.name + "\n";
  for (const FunctionName& n : names.export_symbols) s += "e" + std::to_string(n.index) + "\t" + n.name + "\n";
  return s;
}

ModuleNames ParseModuleNames(std::string_view text) {
  ModuleNames out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    bool is_export = !line.empty() && line[0] == 'e';
    if (is_export) line.remove_prefix(1);
    size_t tab = line.find('\t');
    if (tab == 0 || tab == std::string_view::npos || tab > 10) continue;
    uint64_t index = 0;
    bool digits = true;
    for (char c : line.substr(0, tab)) {
      digits = digits && c >= '0' && c <= '9';
      index = index * 10 + static_cast<uint64_t>(c - '0');
    }
    if (!digits || index > UINT32_MAX) continue;
    (is_export ? out.export_symbols : out.functions)
        .push_back({static_cast<uint32_t>(index), std::string(line.substr(tab + 1))});
  }
  return out;
}

namespace {

struct FunctionRange {
  uintptr_t lo, hi;  // offsets in the object: [lo, hi)
  uint32_t index;
};

// "w2c_f<digits>", optionally with a suffix the C compiler gave a copy (".part.0", ".cold", ...).
std::optional<uint32_t> GuestFunctionIndex(const char* name) {
  if (std::strncmp(name, "w2c_f", 5) != 0) return std::nullopt;
  const char* p = name + 5;
  uint64_t index = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 11; ++p, ++digits) index = index * 10 + static_cast<uint64_t>(*p - '0');
  if (digits == 0 || index > UINT32_MAX || (*p != '\0' && *p != '.')) return std::nullopt;
  return static_cast<uint32_t>(index);
}

bool ReadAt(int fd, uint64_t offset, void* out, size_t size) {
  auto* dst = static_cast<char*>(out);
  while (size > 0) {
    ssize_t n = pread(fd, dst, size, static_cast<off_t>(offset));
    if (n <= 0) return false;
    dst += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The w2c_f* functions of a compiled module, sorted by address, from its ELF symbol table (the
// engine never strips it). Empty when the file cannot be read as a 64-bit ELF object.
std::vector<FunctionRange> ReadGuestFunctions(const std::string& so_path,
                                              const std::unordered_map<std::string_view, uint32_t>& export_symbols) {
  constexpr uint64_t kMaxTable = 256u << 20;
  std::vector<FunctionRange> out;
  int fd = open(so_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  Elf64_Ehdr eh;
  if (!ReadAt(fd, 0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) {
    return out;
  }
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!ReadAt(fd, eh.e_shoff, sections.data(), sections.size() * sizeof(Elf64_Shdr))) return out;
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= sections.size() || sh.sh_entsize != sizeof(Elf64_Sym)) continue;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (sh.sh_size > kMaxTable || strtab.sh_size > kMaxTable || strtab.sh_size == 0) return out;
    std::vector<Elf64_Sym> syms(sh.sh_size / sizeof(Elf64_Sym));
    std::string strings(strtab.sh_size, '\0');
    if (!ReadAt(fd, sh.sh_offset, syms.data(), syms.size() * sizeof(Elf64_Sym)) ||
        !ReadAt(fd, strtab.sh_offset, strings.data(), strings.size())) {
      return out;
    }
    strings.back() = '\0';  // every name ends inside the table
    for (const Elf64_Sym& s : syms) {
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_size == 0 || s.st_name >= strings.size()) continue;
      const char* name = strings.c_str() + s.st_name;
      if (std::optional<uint32_t> index = GuestFunctionIndex(name)) {
        out.push_back({s.st_value, s.st_value + s.st_size, *index});
      } else if (auto it = export_symbols.find(name); it != export_symbols.end()) {
        out.push_back({s.st_value, s.st_value + s.st_size, it->second});
      }
    }
    break;
  }
  std::sort(out.begin(), out.end(), [](const FunctionRange& a, const FunctionRange& b) { return a.lo < b.lo; });
  return out;
}

}  // namespace

std::vector<TrapFrame> Symbolize(std::span<const uintptr_t> addresses, const std::string& so_path, uintptr_t load_base,
                                 const std::string& names_path) {
  ModuleNames names;
  if (std::ifstream in(names_path, std::ios::binary | std::ios::ate); in) {
    // As long as the file is (the translator bounds it), not a buffer of the largest it may be.
    const auto size = static_cast<size_t>(std::max<std::streamoff>(0, in.tellg()));
    std::string text(std::min(size, kMaxFunctionNamesBytes * 2), '\0');
    in.seekg(0);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    names = ParseModuleNames(text);
  }
  std::unordered_map<std::string_view, uint32_t> export_symbols;
  for (const FunctionName& e : names.export_symbols) export_symbols.emplace(e.name, e.index);
  std::vector<FunctionRange> ranges = ReadGuestFunctions(so_path, export_symbols);
  std::vector<TrapFrame> frames;
  for (uintptr_t a : addresses) {
    if (a < load_base) continue;
    uintptr_t off = a - load_base;
    auto it = std::upper_bound(ranges.begin(), ranges.end(), off,
                               [](uintptr_t v, const FunctionRange& r) { return v < r.lo; });
    if (it == ranges.begin()) continue;
    --it;
    if (off >= it->hi) continue;
    frames.push_back({it->index, ""});
  }
  std::unordered_map<uint32_t, std::string_view> by_index;
  for (const FunctionName& n : names.functions) by_index.emplace(n.index, n.name);
  for (TrapFrame& f : frames) {
    if (auto it = by_index.find(f.function_index); it != by_index.end()) f.name = it->second;
  }
  return frames;
}

std::string FormatBacktrace(std::string_view trap, const std::vector<std::string>& frames) {
  if (frames.empty()) return "";
  std::string s = "gpuwasm: wasm backtrace of the trap (" + std::string(trap) + "), innermost call first:\n";
  for (size_t i = 0; i < frames.size();) {
    size_t j = i;
    while (j + 1 < frames.size() && frames[j + 1] == frames[i]) ++j;
    if (j - i >= 2) {
      s += "  #" + std::to_string(i) + "-#" + std::to_string(j) + " " + frames[i] + " (" + std::to_string(j - i + 1) +
           " frames)\n";
    } else {
      for (size_t k = i; k <= j; ++k) s += "  #" + std::to_string(k) + " " + frames[k] + "\n";
    }
    i = j + 1;
  }
  return s;
}

}  // namespace gpuwasm::wasm
