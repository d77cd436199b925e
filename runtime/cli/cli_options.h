// Pieces the `rill` subcommands share: option parsing with the messages and
// exit codes every command uses (2 for a bad command line, 1 for a file it
// cannot read), the runtime config from --config / --backend, and timing.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rill.h"

namespace rill_cli {

// True for --help and -h.
bool is_help_option(const char* arg);

// value as an integer from min to max. Otherwise prints
// "rill COMMAND: OPTION: expected an integer from MIN to MAX, got 'VALUE'" and
// returns false (the caller exits with 2).
bool parse_int_option(const char* command, const char* option, const char* value, int min, int max, int& out);

// "1 2 3" (token ids >= 0 separated by spaces, tabs, newlines or commas; at
// least one) into out.
// Otherwise prints "rill COMMAND: --ids: expected ..." and returns false.
bool parse_ids_option(const char* command, const std::string& text, std::vector<int32_t>& out);

// f32, f16 or bf16 as a dtype; false for anything else.
bool parse_dtype_name(const char* name, rill_dtype& out);

// The options of a command that loads a model: --dtype, --weight-format and
// --copy-weights.
struct LoadOptions {
  const char* dtype = nullptr;          // NULL: not given
  const char* weight_format = nullptr;  // NULL: not given
  bool copy_weights = false;

  // Takes argv[i] (and its value, advancing i) when it is one of the three;
  // false otherwise, and for --dtype or --weight-format with no value after it.
  bool take(int argc, char** argv, int& i);

  // The options into options: false, with the reason on stderr, for a bad or
  // contradictory value. --weight-format q8_0 ... q6_k quantizes the matrices
  // at load; f32, f16 or bf16 keeps them in that compute dtype.
  bool apply(const char* command, rill_lm_load_options& options) const;

  // Their help lines, the text starting at column `column` as the caller's do.
  static void print_help(std::FILE* to, int column);
};

// The whole file as text; false with error saying why when it cannot be read
// (missing, not a regular file, ...).
bool read_text(const std::string& path, std::string& out, std::string& error);

// The --config FILE and --backend NAME options of a command.
struct RuntimeOptions {
  const char* config_path = nullptr;
  const char* backend = nullptr;

  // Takes argv[i] and its value (advancing i) when it is one of the two
  // options with a value after it; false otherwise.
  bool take(int argc, char** argv, int& i);

  // The runtime config text: the file's text, a [runtime] table naming the
  // backend, or empty (the library's defaults). Returns 0, or after a message
  // naming the command the exit code: 2 for both options or a backend name
  // that is not [a-z0-9_]+, 1 for a file that cannot be read.
  int config_text(const char* command, std::string& config) const;
};

// An operand as the user gave it: its name on the command line ("--model",
// or "IN" when given by position) and its value.
using Operand = std::pair<const char*, std::string>;

// True, after printing "rill COMMAND: NAME PATH is OPTION's file PATH", when
// output (NAME PATH) already exists as one of the inputs (OPTION, path) — or
// as a file inside an input that is a folder. Commands check this before they
// start: writing over an input (a memory-mapped checkpoint, say) destroys it.
bool output_overwrites_input(const char* command, const Operand& output, const std::vector<Operand>& inputs);

double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace rill_cli
