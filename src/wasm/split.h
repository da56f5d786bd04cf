// Splitting a translated module's C into parts the C compiler builds in parallel (internal to
// src/wasm/). A 1.4 MB module is about 15 MB of C; one compiler process on it takes minutes.
//
// wasm2c writes one translation unit: a prelude (includes, macros, static helpers, the function
// type table), a forward declaration of every function, the module's data and initialisation,
// then every function's definition, then the exported wrappers and our glue. The split moves
// function definitions (`static T w2c_NAME(Z_guest_instance_t* instance, ...) {` up to the next
// `}` in column 0) into parts of about equal size. Every part repeats the prelude and the forward
// declarations; the functions and the type table become hidden (visible across the parts of one
// shared object, never outside it), and part 0 keeps everything else. Nothing is renamed, so
// backtraces (backtrace.h) find the same symbols.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpuwasm::wasm {

// `c` (Translation::c_source) in at most `parts` translation units, part 0 first; fewer when it
// has fewer functions. One part is `c` unchanged. A source that is not wasm2c's shape (no forward
// declarations found) is returned whole.
std::vector<std::string> SplitTranslation(std::string_view c, size_t parts);

}  // namespace gpuwasm::wasm
