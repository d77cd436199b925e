// tokenizer.json's "post_processor": the special tokens an encoding gets
// when add_special_tokens is set (TemplateProcessing for one sequence,
// BertProcessing, RobertaProcessing, ByteLevel, Sequence).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tokenizer/json_reader.h"

namespace rill::tok {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
};

// The post-processor described by value (not null).
std::unique_ptr<PostProcessor> load_post_processor(const Json& value, const JsonAt& at);

// A template that puts prefix before and suffix after the sequence (what
// tokenizer_config.json's add_bos_token / add_eos_token ask for).
std::unique_ptr<PostProcessor> make_wrapping_processor(std::vector<int32_t> prefix, std::vector<int32_t> suffix);

}  // namespace rill::tok
