# Cross-builds rill for 64-bit Windows with Debian's MinGW-w64
# (g++-mingw-w64-x86-64):
#   cmake -S . -B build-windows -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/mingw-w64-x86_64.cmake \
#         -DRILL_WINDOWS_DEPS=<prefix from scripts/windows-deps.sh>
# The posix thread model is the one whose libstdc++ has std::thread and
# std::mutex. Everything is linked statically (libstdc++, libgcc, winpthread),
# so rill.dll, the plugins and the programs need no MinGW runtime DLLs beside
# them. With wine on PATH, CTest runs the tests under it.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)

set(RILL_WINDOWS_DEPS "" CACHE PATH "Prefix holding the Windows builds of rill's dependencies (scripts/windows-deps.sh)")
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32 ${RILL_WINDOWS_DEPS})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
if(RILL_WINDOWS_DEPS)
  # pkg-config (the tokenizer's PCRE2 and utf8proc) looks only in the prefix.
  set(ENV{PKG_CONFIG_LIBDIR} "${RILL_WINDOWS_DEPS}/lib/pkgconfig")
  set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
endif()

set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static")

# Debian keeps wine64 in /usr/lib/wine when the wine wrapper package is absent.
find_program(RILL_WINE NAMES wine64 wine HINTS /usr/lib/wine)
if(RILL_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RILL_WINE})
endif()
