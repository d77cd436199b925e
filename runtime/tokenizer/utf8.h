// UTF-8 helpers for the tokenizer: code points, Rust's character classes that
// tokenizers relies on, lossy decoding as Rust's String::from_utf8_lossy, and
// GPT-2's byte-to-character map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rill::tok {

// The code point starting at s[i] of valid UTF-8; advances i past it.
uint32_t next_code_point(std::string_view s, size_t& i);

// Appends cp encoded as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

// The byte offset of the first invalid UTF-8 sequence, or s.size() when s is valid.
size_t find_invalid_utf8(std::string_view s);

// bytes as text, each maximal invalid subsequence replaced by one U+FFFD
// (Rust's String::from_utf8_lossy, which tokenizers' byte-level decoder uses).
std::string from_utf8_lossy(std::string_view bytes);

// Rust's char::is_whitespace: the Unicode White_Space property.
bool is_whitespace(uint32_t cp);

// GPT-2's bytes_to_unicode: the printable character that stands for byte b.
uint32_t byte_level_char(uint8_t b);
// The byte that character cp stands for, or -1 when cp stands for none.
int byte_level_byte(uint32_t cp);

}  // namespace rill::tok
