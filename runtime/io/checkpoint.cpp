#include "checkpoint.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "json_release.h"
#include "text_file.h"

namespace rill::io {
namespace {

// A plain file name inside the folder: no separators, not "." or "..".
bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos;
}

// Something is at path (a named pipe or a folder too: the reader then refuses
// it). Asked without opening it, which would wait on a named pipe.
bool file_exists(const std::string& path) {
  std::error_code ignored;
  return std::filesystem::exists(std::filesystem::u8path(path), ignored);
}

}  // namespace

rill_status open_checkpoint(const std::string& folder, Shards& out, std::string& error) {
  const std::string index_path = folder + "/model.safetensors.index.json";
  const std::string single = folder + "/model.safetensors";
  auto io_error = [&](const std::string& text) {
    error = text;
    return RILL_ERROR_IO;
  };
  Shards shards;
  if (!file_exists(index_path)) {
    if (!file_exists(single)) {
      return io_error(folder + ": holds neither model.safetensors nor model.safetensors.index.json");
    }
    std::unique_ptr<SafetensorsFile> file;
    if (const rill_status opened = SafetensorsFile::open(single, file, error); opened != RILL_OK) return opened;
    shards.push_back(std::move(file));
    out = std::move(shards);
    return RILL_OK;
  }
  std::string text;
  if (read_text_file(index_path, text, error) != ReadResult::ok) {
    return io_error(index_path + ": " + (error.empty() ? "cannot open" : error));
  }
  nlohmann::json index;
  const JsonRelease release(index);
  try {
    index = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number too large
    return io_error(index_path + ": not valid JSON: " + e.what());
  }
  const auto map = index.is_object() ? index.find("weight_map") : index.end();
  if (map == index.end() || !map->is_object() || map->empty()) {
    return io_error(index_path + ": expected an object with a non-empty \"weight_map\"");
  }
  std::map<std::string, std::set<std::string>> by_shard;
  for (const auto& [tensor, shard] : map->items()) {
    if (!shard.is_string() || !is_plain_name(shard.get<std::string>())) {
      return io_error(index_path + ": weight_map['" + tensor + "']: expected a file name in the folder, got " +
                      shard.dump());
    }
    by_shard[shard.get<std::string>()].insert(tensor);
  }
  for (const auto& [shard, tensors] : by_shard) {
    std::unique_ptr<SafetensorsFile> file;
    if (const rill_status opened = SafetensorsFile::open(folder + "/" + shard, file, error); opened != RILL_OK) {
      return opened;
    }
    for (const std::string& name : tensors) {
      if (file->find(name) == nullptr) {
        return io_error(file->path() + ": lacks tensor '" + name + "', which " + index_path + " places there");
      }
    }
    for (const SafetensorsTensor& t : file->tensors()) {
      if (tensors.count(t.name) == 0) {
        return io_error(file->path() + ": holds tensor '" + t.name + "', which " + index_path +
                        " does not place there");
      }
    }
    shards.push_back(std::move(file));
  }
  out = std::move(shards);
  return RILL_OK;
}

const SafetensorsTensor* find_tensor(const Shards& shards, const std::string& name, const SafetensorsFile** in) {
  for (const auto& shard : shards) {
    if (const SafetensorsTensor* t = shard->find(name)) {
      if (in != nullptr) *in = shard.get();
      return t;
    }
  }
  return nullptr;
}

}  // namespace rill::io
