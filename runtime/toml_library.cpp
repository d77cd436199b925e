// toml++'s compiled half, built once: every other file that includes
// <toml++/toml.h> sees its declarations only (TOML_HEADER_ONLY=0, set by the
// rill_toml target), instead of compiling the whole parser again.
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
