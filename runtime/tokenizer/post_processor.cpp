#include "tokenizer/post_processor.h"

namespace rill::tok {

namespace {

// Special ids around the sequence.
class Wrapping final : public PostProcessor {
 public:
  Wrapping(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    if (!add_special_tokens) return;
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }

 private:
  std::vector<int32_t> prefix_, suffix_;
};

// Offsets only: the ids are left as they are.
class IdsUnchanged final : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void process(std::vector<int32_t>& ids, bool add_special_tokens) const override {
    for (const auto& step : steps_) step->process(ids, add_special_tokens);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// TemplateProcessing's "single": SpecialToken entries resolved through
// "special_tokens" (each may stand for several ids), one Sequence entry.
std::unique_ptr<PostProcessor> load_template(const Json& value, const JsonAt& at) {
  const JsonAt specials_at = at / "special_tokens";
  const Json* specials = optional(value, "special_tokens");
  if (specials != nullptr) expect_object(*specials, specials_at);
  const JsonAt single_at = at / "single";
  const Json& single = expect_array(required(value, at, "single"), single_at);
  std::vector<int32_t> prefix, suffix;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const JsonAt item_at = single_at[i];
    const Json& item = expect_object(single[i], item_at);
    if (optional(item, "Sequence") != nullptr) {
      if (seen_sequence) item_at.fail("a second Sequence entry in a single-sequence template");
      seen_sequence = true;
      continue;
    }
    const Json* special = optional(item, "SpecialToken");
    if (special == nullptr) item_at.fail("expected an object with a SpecialToken or Sequence member");
    const JsonAt special_at = item_at / "SpecialToken";
    const std::string name = expect_string(required(*special, special_at, "id"), special_at / "id");
    const Json* entry = specials ? optional(*specials, name.c_str()) : nullptr;
    if (entry == nullptr) (special_at / "id").fail("'" + name + "' is not listed in special_tokens");
    const JsonAt entry_at = specials_at / name;
    const Json& ids = expect_array(required(*entry, entry_at, "ids"), entry_at / "ids");
    for (size_t k = 0; k < ids.size(); ++k) {
      const auto id = static_cast<int32_t>(expect_int(ids[k], (entry_at / "ids")[k], 0, INT32_MAX - 1));
      (seen_sequence ? suffix : prefix).push_back(id);
    }
  }
  if (!seen_sequence) single_at.fail("expected a Sequence entry, found none");
  return make_wrapping_processor(std::move(prefix), std::move(suffix));
}

// BertProcessing / RobertaProcessing: "cls": [token, id] before, "sep" after.
int32_t pair_id(const Json& value, const JsonAt& at, const char* key) {
  const JsonAt pair_at = at / key;
  const Json& pair = expect_array(required(value, at, key), pair_at);
  if (pair.size() != 2) pair_at.fail("expected [token, id], got " + pair.dump());
  return static_cast<int32_t>(expect_int(pair[1], pair_at[1], 0, INT32_MAX - 1));
}

}  // namespace

std::unique_ptr<PostProcessor> make_wrapping_processor(std::vector<int32_t> prefix, std::vector<int32_t> suffix) {
  return std::make_unique<Wrapping>(std::move(prefix), std::move(suffix));
}

std::unique_ptr<PostProcessor> load_post_processor(const Json& value, const JsonAt& at) {
  const std::string type = component_type(value, at);
  if (type == "TemplateProcessing") return load_template(value, at);
  if (type == "ByteLevel") return std::make_unique<IdsUnchanged>();
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return make_wrapping_processor({pair_id(value, at, "cls")}, {pair_id(value, at, "sep")});
  }
  if (type == "Sequence") {
    const JsonAt list_at = at / "processors";
    const Json& list = expect_array(required(value, at, "processors"), list_at);
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list.size(); ++i) steps.push_back(load_post_processor(list[i], list_at[i]));
    return std::make_unique<Sequence>(std::move(steps));
  }
  unknown_type(at, type, "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence");
}

}  // namespace rill::tok
