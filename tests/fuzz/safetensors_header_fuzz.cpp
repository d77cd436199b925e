// The safetensors reader, structure-aware: the input chooses a header that is
// always JSON of the right form (entries of known tensor names, dtypes,
// shapes and data_offsets, with numbers drawn near the right ones and at the
// edges of their ranges) and the data behind it, so the fuzzer spends its
// time on the checks of sizes, offsets, overlaps and shapes rather than on
// JSON syntax.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "../support/safetensors_file.h"
#include "fuzz_support.h"
#include "safetensors_model.h"

namespace {

const char* const kDtypes[] = {"F32", "F16", "BF16", "I64", "F64", "U8", "BOOL", "Q4", ""};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rill_fuzz::FuzzInput in(data, size);
  const auto& known = rill_fuzz::small_model_tensors();
  const size_t entries = in.byte() % 14;
  std::string header = "{";
  if (in.flag()) header += "\"__metadata__\":{\"format\":\"pt\"},";
  uint64_t offset = 0;
  for (size_t e = 0; e < entries; ++e) {
    const auto& tensor = known[in.pick(known.size())];
    const char* dtype = kDtypes[in.byte() % 3 == 0 ? in.pick(std::size(kDtypes)) : in.byte() % 3];
    const uint64_t element = std::string(dtype) == "F32" ? 4 : 2;
    std::string shape = "[";
    uint64_t count = 1;
    for (size_t d = 0; d < tensor.shape.size(); ++d) {
      const uint64_t dim = in.byte() % 4 == 0 ? in.mutated(static_cast<uint64_t>(tensor.shape[d]))
                                              : static_cast<uint64_t>(tensor.shape[d]);
      shape += (d > 0 ? "," : "") + std::to_string(dim);
      count *= dim;
    }
    if (in.byte() % 16 == 0) shape += ",1";  // one dimension too many
    shape += "]";
    const uint64_t begin = in.byte() % 4 == 0 ? in.mutated(offset) : offset;
    const uint64_t end = in.byte() % 4 == 0 ? in.mutated(begin + count * element) : begin + count * element;
    offset = end;
    header += (e > 0 ? "," : "") + rill_test::safetensors_entry(tensor.name, dtype, shape, begin, end);
  }
  header += "}";
  header.append(in.byte() % 8, ' ');  // safetensors pads headers with spaces
  uint64_t length = header.size();
  if (in.byte() % 8 == 0) length = in.mutated(length);
  // The data: what the offsets ask for, give or take, filled from the input.
  const uint64_t data_bytes = std::min<uint64_t>(in.byte() % 4 == 0 ? in.mutated(offset) : offset, 1 << 16);
  const std::string fill = in.rest();
  std::string tensor_data;
  for (uint64_t i = 0; i < data_bytes; ++i) tensor_data.push_back(fill.empty() ? '\0' : fill[i % fill.size()]);
  const std::string file = rill_test::safetensors_bytes(header, tensor_data, length);

  const std::string path = rill_fuzz::write_scratch_file("model.safetensors", file.data(), file.size());
  const rill_model_desc desc = rill_fuzz::small_model_desc();
  rill_model* model = nullptr;
  if (rill_model_create(rill_fuzz::cpu_context(), &desc, &model) != RILL_OK) {
    std::fprintf(stderr, "rill fuzz: the small model cannot be created: %s\n", rill_last_error());
    std::abort();
  }
  (void)rill_model_load_safetensors(model, path.c_str());
  (void)rill_model_check_weights(model);
  rill_model_destroy(model);
  return 0;
}
