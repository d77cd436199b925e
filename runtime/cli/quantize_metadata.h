// config.json's metadata for `rill quantize` from a Hugging Face folder
// (quantize_metadata.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "gguf_names.h"
#include "gguf_writer.h"
#include "hf_config.h"

namespace rill_cli {

// config (config.json as rill maps it; object, read from source) as the GGUF
// architecture arch's (traits a) metadata keys on writer, else false with
// error naming the config.json key the keys cannot carry.
bool write_hf_metadata(const rill::lm::HfConfig& config, const nlohmann::json& object, const std::string& source,
                       const std::string& arch, const rill::gguf::Architecture& a, rill::gguf::Writer& writer,
                       std::string& error);

}  // namespace rill_cli
