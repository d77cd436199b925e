// The operating-system layer (runtime/platform) with UTF-8 names outside any
// ANSI code page: on Windows every call must go through the UTF-16 file APIs.
// std::filesystem (u8path) is the independent check of what reached the disk.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "platform.h"

namespace fs = std::filesystem;

namespace {

// Greek, Japanese and an emoji (outside the Basic Multilingual Plane).
const std::string kName = "\xce\xa9\xce\xbc\xce\xad\xce\xb3\xce\xb1-\xe6\x97\xa5\xe6\x9c\xac-\xf0\x9f\x98\x80";

// A folder of this process's own under the working directory, removed at the end.
struct ScratchFolder {
  std::string path = "platform-test-" + std::to_string(rill::platform::process_id()) + "-" + kName;
  ScratchFolder() {
    fs::remove_all(fs::u8path(path));
    fs::create_directory(fs::u8path(path));
  }
  ~ScratchFolder() { fs::remove_all(fs::u8path(path)); }
};

void write_file(const std::string& path, const std::string& text) {
  std::FILE* file = rill::platform::open_file(path, "wb");
  REQUIRE_MESSAGE(file != nullptr, path);
  REQUIRE(std::fwrite(text.data(), 1, text.size(), file) == text.size());
  REQUIRE(std::fclose(file) == 0);
}

// The file's bytes, read through std::filesystem's path (not through rill).
std::string disk_text(const std::string& path) {
  std::ifstream file(fs::u8path(path), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("files and folders with UTF-8 names are written, read, mapped and told apart") {
  ScratchFolder folder;
  const std::string path = folder.path + "/" + kName + ".bin";
  const std::string text = "weights \xe2\x82\xac\n";
  write_file(path, text);
  CHECK(disk_text(path) == text);

  uint64_t bytes = 0;
  std::string error;
  std::FILE* file = rill::platform::open_regular_file(path, bytes, error);
  REQUIRE_MESSAGE(file != nullptr, error);
  CHECK(bytes == text.size());
  std::string read(text.size(), '\0');
  CHECK(std::fread(read.data(), 1, read.size(), file) == read.size());
  std::fclose(file);
  CHECK(read == text);

  rill::platform::MappedFile mapped;
  REQUIRE_MESSAGE(mapped.open(path, error), error);
  REQUIRE(mapped.size() == text.size());
  CHECK(std::string(reinterpret_cast<const char*>(mapped.data()), mapped.size()) == text);

  CHECK(rill::platform::is_directory(folder.path));
  CHECK_FALSE(rill::platform::is_directory(path));
  CHECK(rill::platform::open_regular_file(folder.path, bytes, error) == nullptr);
  CHECK(error == "not a regular file");
  rill::platform::MappedFile folder_map;
  CHECK_FALSE(folder_map.open(folder.path, error));
  CHECK(error == "not a regular file");
}

TEST_CASE("replace_file renames over an existing file; remove_file deletes") {
  ScratchFolder folder;
  const std::string target = folder.path + "/" + kName + ".npy";
  const std::string partial = target + ".partial";
  write_file(target, "old result");
  write_file(partial, "new result");
  std::string error;
  REQUIRE_MESSAGE(rill::platform::replace_file(partial, target, error), error);
  CHECK(disk_text(target) == "new result");
  CHECK_FALSE(fs::exists(fs::u8path(partial)));

  // Nothing to rename: false, with the system's reason.
  error.clear();
  CHECK_FALSE(rill::platform::replace_file(partial, target, error));
  CHECK_FALSE(error.empty());
  CHECK(disk_text(target) == "new result");

  rill::platform::remove_file(target);
  CHECK_FALSE(fs::exists(fs::u8path(target)));
  rill::platform::remove_file(target);  // already gone: nothing happens
}
