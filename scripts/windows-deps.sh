#!/usr/bin/env bash
# Builds what rill needs for the Windows cross-build into one prefix:
#   scripts/windows-deps.sh <prefix>
# - PCRE2 and utf8proc (the tokenizer), which Debian ships for Linux only: their
#   Debian source packages, cross-built with MinGW-w64 as static libraries, with
#   pkg-config files that carry the static-linking defines.
# - toml++, nlohmann/json and doctest, header-only: their Debian headers, each
#   in its own folder (never all of /usr/include, whose glibc headers would
#   shadow MinGW's), with CMake package files for find_package.
# - The Vulkan headers (libvulkan-dev), for the Vulkan plugin, which loads
#   vulkan-1.dll at run time and so needs no import library.
# Needs the deb-src lines for Debian main (added when missing) and
# scripts/install-deps.sh run before. Does nothing when the prefix is complete.
set -euo pipefail

prefix=${1:?usage: scripts/windows-deps.sh <prefix>}
root=$(cd "$(dirname "$0")/.." && pwd)
toolchain=$root/cmake/toolchains/mingw-w64-x86_64.cmake
stamp=$prefix/.complete
[ -f "$stamp" ] && exit 0
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
src=$prefix/src
mkdir -p "$src" "$prefix/lib/pkgconfig" "$prefix/lib/cmake" "$prefix/include"

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

# The upstream tarballs from Debian's source packages.
fetch() {  # <source package>
  if ! ls "$src/$1"_*.orig.tar.* >/dev/null 2>&1; then
    if ! (cd "$src" && apt-get source --download-only "$1" >/dev/null 2>&1 </dev/null); then
      local list=/etc/apt/sources.list.d/rill-debian-src.sources
      echo "windows-deps: adding Debian source lines ($list)"
      local suite
      suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
      printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$suite" | "${sudo_cmd[@]}" tee "$list" >/dev/null
      "${sudo_cmd[@]}" apt-get update -q >/dev/null
      (cd "$src" && apt-get source --download-only "$1" >/dev/null 2>&1)
    fi
  fi
  local tarball
  tarball=$(ls "$src/$1"_*.orig.tar.*)
  rm -rf "$src/$1" && mkdir "$src/$1"
  tar -xf "$tarball" -C "$src/$1" --strip-components=1
}

cross_cmake() {  # <source dir> <build dir> [cmake args...]
  local source=$1 build=$2; shift 2
  cmake -S "$source" -B "$build" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF "$@" >/dev/null
  cmake --build "$build" -j "${RILL_JOBS:-$(nproc)}" >/dev/null
  cmake --install "$build" >/dev/null
}

echo "windows-deps: PCRE2"
fetch pcre2
cross_cmake "$src/pcre2" "$src/pcre2-build" -DPCRE2_SUPPORT_JIT=ON -DPCRE2_BUILD_PCRE2GREP=OFF \
  -DPCRE2_BUILD_TESTS=OFF -DPCRE2_SUPPORT_LIBBZ2=OFF -DPCRE2_SUPPORT_LIBZ=OFF -DPCRE2_SUPPORT_LIBEDIT=OFF \
  -DPCRE2_SUPPORT_LIBREADLINE=OFF
pcre2_version=$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/libpcre2-8.pc")
cat >"$prefix/lib/pkgconfig/libpcre2-8.pc" <<PC
Name: libpcre2-8
Description: PCRE2, 8-bit, static (MinGW-w64)
Version: $pcre2_version
Libs: -L$prefix/lib -lpcre2-8
Cflags: -I$prefix/include -DPCRE2_STATIC
PC

echo "windows-deps: utf8proc"
fetch utf8proc
cross_cmake "$src/utf8proc" "$src/utf8proc-build" -DUTF8PROC_INSTALL=ON
utf8proc_version=$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/libutf8proc.pc")
utf8proc_library=$(basename "$(ls "$prefix"/lib/libutf8proc*.a | head -n1)" .a)
cat >"$prefix/lib/pkgconfig/libutf8proc.pc" <<PC
Name: libutf8proc
Description: utf8proc, static (MinGW-w64)
Version: $utf8proc_version
Libs: -L$prefix/lib -l${utf8proc_library#lib}
Cflags: -I$prefix/include -DUTF8PROC_STATIC
PC

echo "windows-deps: header-only libraries"
header_package() {  # <package name> <target> <header folder> [compile definition]
  local name=$1 target=$2 folder=$3 define=${4:-}
  mkdir -p "$prefix/headers/$name" "$prefix/lib/cmake/$name"
  ln -sfn "/usr/include/$folder" "$prefix/headers/$name/$folder"
  cat >"$prefix/lib/cmake/$name/$name-config.cmake" <<CMAKE
if(NOT TARGET $target)
  add_library($target INTERFACE IMPORTED)
  set_target_properties($target PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$prefix/headers/$name"
                        INTERFACE_COMPILE_DEFINITIONS "$define")
endif()
CMAKE
}
header_package tomlplusplus tomlplusplus::tomlplusplus toml++ TOML_HEADER_ONLY=1
header_package nlohmann_json nlohmann_json::nlohmann_json nlohmann
header_package doctest doctest::doctest doctest
for folder in vulkan vk_video; do
  ln -sfn "/usr/include/$folder" "$prefix/include/$folder"
done
touch "$stamp"
