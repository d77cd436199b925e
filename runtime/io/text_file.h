// Reading a whole small file (JSON, TOML) as text: the one reader every
// config and tokenizer file goes through, so that each refuses what is not a
// regular file — a named pipe would otherwise block the host forever — with
// the same words.
#pragma once

#include <string>

namespace rill::io {

enum class ReadResult {
  ok,
  missing,  // nothing at path (ENOENT)
  failed,   // error says why
};

// Reads the whole regular file at path into out. On failure error says why,
// without the path: "cannot open: <reason>", "not a regular file",
// "cannot read: <reason>"; out is left alone.
ReadResult read_text_file(const std::string& path, std::string& out, std::string& error);

}  // namespace rill::io
