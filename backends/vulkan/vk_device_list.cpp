#include "vk_device_list.h"

namespace rill_vk {

std::vector<size_t> unique_devices(const std::vector<DeviceIdentity>& devices) {
  const std::array<uint8_t, 16> unset{};
  std::vector<size_t> kept;
  for (size_t i = 0; i < devices.size(); ++i) {
    bool listed = false;
    if (devices[i].uuid != unset) {
      for (size_t& k : kept) {
        if (devices[k].uuid != devices[i].uuid) continue;
        if (devices[i].api_version > devices[k].api_version) k = i;
        listed = true;
        break;
      }
    }
    if (!listed) kept.push_back(i);
  }
  return kept;
}

}  // namespace rill_vk
