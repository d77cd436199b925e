// The tables a plugin hands out for one interface version: the plugin's full
// tables, labelled with that version and with each table's struct_size cut
// to what the version defines, so that a host offering only an older version
// gets tables it can load. A plugin keeps one instance per version it serves,
// for the life of the process; instances never move.
#pragma once

#include "rill_backend.h"

namespace rill_plugin {

class VersionedTables {
 public:
  VersionedTables(const rill_backend& backend, const rill_backend_ops& ops, uint32_t version)
      : backend_(backend), ops_(ops) {
    backend_.abi_version = version;
    backend_.struct_size = RILL_BACKEND_SIZE(version);
    backend_.ops = &ops_;
    ops_.abi_version = version;
    ops_.struct_size = RILL_BACKEND_OPS_SIZE(version);
  }
  VersionedTables(const VersionedTables&) = delete;
  VersionedTables& operator=(const VersionedTables&) = delete;

  const rill_backend* backend() const { return &backend_; }

 private:
  rill_backend backend_;
  rill_backend_ops ops_;
};

}  // namespace rill_plugin
