// How tinyt's definitions reach a program. The public headers declare the engine; its
// definitions (scheduler, codegen, renderers, backends, the bodies of Tensor's methods) are
// compiled in one of two ways:
//  - compiled (the default): in exactly one translation unit, the one that defines
//    TINYT_IMPLEMENTATION before including tinyt.hpp, or in the library that the CMake target
//    tinyt::tinyt builds (src/tinyt.cpp); every other file parses only the declarations;
//  - TINYT_HEADER_ONLY: inline in every translation unit that includes tinyt.hpp (one-file
//    programs; every file pays for compiling the whole engine).
#pragma once

#if defined(TINYT_HEADER_ONLY) && defined(TINYT_IMPLEMENTATION)
#error "tinyt: define TINYT_HEADER_ONLY (everything inline) or TINYT_IMPLEMENTATION (the one file that compiles tinyt), not both"
#endif

/// Marks the definition of a function that the public headers declare: inline in header-only
/// mode, an ordinary (exported) definition in the implementation file.
#ifdef TINYT_HEADER_ONLY
#define TINYT_INLINE inline
#else
#define TINYT_INLINE
#endif

/// Whether this translation unit compiles tinyt's definitions.
#if defined(TINYT_HEADER_ONLY) || defined(TINYT_IMPLEMENTATION)
#define TINYT_DEFINES_ENGINE 1
#else
#define TINYT_DEFINES_ENGINE 0
#endif

#ifdef TINYT_IMPLEMENTATION
namespace tinyt::inline v0::link_check {
// The symbol tinyt.hpp's link check refers to (see there), defined first in the file so that a
// second definition is the first error the linker reports.
[[gnu::cold]] int define_TINYT_IMPLEMENTATION_in_exactly_one_file_or_link_tinyt() { return 1; }
}  // namespace tinyt::inline v0::link_check
#endif
