// A Hugging Face checkpoint: model.safetensors, or the shards that
// model.safetensors.index.json names, opened and cross-checked.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "safetensors.h"

namespace rill::io {

using Shards = std::vector<std::unique_ptr<SafetensorsFile>>;

// Opens folder's model.safetensors, or every shard its
// model.safetensors.index.json names, and checks that each tensor the index
// names is in its shard and each shard's tensors are the ones the index gives
// it. Returns RILL_OK, or RILL_ERROR_IO with error naming the file at fault;
// out is set only on success. Never touches the thread's last error.
rill_status open_checkpoint(const std::string& folder, Shards& out, std::string& error);

// The tensor called name in the shards, or nullptr; *in (if given) is its shard.
const SafetensorsTensor* find_tensor(const Shards& shards, const std::string& name,
                                     const SafetensorsFile** in = nullptr);

}  // namespace rill::io
