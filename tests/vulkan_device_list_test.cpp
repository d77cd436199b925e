// Which Vulkan devices the plugin lists (backends/vulkan/vk_device_list.h):
// one GPU exposed by two drivers is listed once, by the driver with the
// newer Vulkan version; devices without a UUID are never merged.
#include <doctest/doctest.h>

#include <vector>

#include "vk_device_list.h"

using rill_vk::DeviceIdentity;

static DeviceIdentity device(uint8_t uuid_byte, uint32_t api_version) {
  DeviceIdentity identity;
  identity.uuid.fill(uuid_byte);
  identity.api_version = api_version;
  return identity;
}

TEST_CASE("one GPU seen through two drivers is listed once, by the newer driver") {
  // GPU 1 through two drivers (the second newer), GPU 2 once, GPU 1 again (older).
  const std::vector<DeviceIdentity> devices = {device(1, 12), device(2, 13), device(1, 13), device(1, 11)};
  CHECK(rill_vk::unique_devices(devices) == std::vector<size_t>{2, 1});
  // On a tie the first one stays.
  CHECK(rill_vk::unique_devices({device(3, 13), device(3, 13)}) == std::vector<size_t>{0});
}

TEST_CASE("distinct GPUs and devices without a UUID are all listed") {
  CHECK(rill_vk::unique_devices({device(1, 13), device(2, 13), device(0, 12), device(0, 12)}) ==
        std::vector<size_t>{0, 1, 2, 3});
  CHECK(rill_vk::unique_devices({}).empty());
}
