/* Which physical devices rill lists: one per GPU. Two drivers can expose the
   same GPU (an ICD of the vendor and Mesa's, say); both report its deviceUUID,
   and rill keeps only one. Pure C++, no Vulkan calls, so that it is tested on
   its own (tests/vulkan_device_list_test.cpp). */
#ifndef RILL_VK_DEVICE_LIST_H
#define RILL_VK_DEVICE_LIST_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rill_vk {

/* What tells physical devices apart, in enumeration order. */
struct DeviceIdentity {
  std::array<uint8_t, 16> uuid{}; /* deviceUUID; all zero when the driver leaves it unset */
  uint32_t api_version = 0;
};

/* The indices of the devices to list, in the order their GPUs first appear: of devices that
   share a deviceUUID, the one with the highest Vulkan version (the first of
   them on a tie). Devices with an all-zero UUID are never merged. */
std::vector<size_t> unique_devices(const std::vector<DeviceIdentity>& devices);

}  // namespace rill_vk

#endif
