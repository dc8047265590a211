// Where an address of this process comes from: the file, and the offset in
// it, that the mapping holding the address maps — what a uprobe names
// (attr.uprobe_path, attr.probe_offset are a file and an offset in it, not an
// address: kernel/events/uprobes.c uprobe_register(inode, offset, ...)).
//
//   Result<FileLocation> at = FileLocationOf(ExecuteTargetAddress());
//   // at->path "/work/build/bin/suite_pmu", at->offset 0x1f2a0: a uprobe there
//   // counts each call of the Workload::Execute target.
//
// Source: /proc/<pid>/maps, Documentation/filesystems/proc.rst "3.1 ... maps":
// "address perms offset dev inode pathname", dev as hex "major:minor";
// fs/proc/task_mmu.c show_map_vma(). The file offset of an address is
// addr - start + offset (vma->vm_pgoff << PAGE_SHIFT), as the kernel's
// vaddr_to_offset() in uprobes.c computes it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "harness/result.h"

namespace perftest {

// One line of /proc/<pid>/maps.
struct MapsLine {
  uint64_t start = 0, end = 0;  // [start, end)
  std::string perms;            // "r-xp"
  uint64_t offset = 0;          // file offset of `start`, bytes
  dev_t dev = 0;                // makedev(major, minor); 0 for anonymous mappings
  ino_t inode = 0;              // 0 for anonymous mappings
  std::string path;             // "" anonymous, "[stack]", or a path (" (deleted)" kept)
};

// Parses one maps line; nullopt when it is not one (the fields above, in order).
std::optional<MapsLine> ParseMapsLine(std::string_view line);

// A file and an offset in it.
struct FileLocation {
  std::string path;   // as the maps line names it
  dev_t dev = 0;      // the inode's st_dev, st_ino
  ino_t inode = 0;
  uint64_t offset = 0;
};

// The file location `addr` maps to in `maps` (the contents of a maps file).
// Errors: ENOENT when no mapping holds `addr`; ENXIO when the one that does
// maps no file (anonymous, [stack], [vdso]: inode 0).
Result<FileLocation> FileLocationIn(std::string_view maps, uint64_t addr);

// FileLocationIn(/proc/self/maps). Errors: as FileLocationIn(); the errno of
// reading /proc/self/maps.
Result<FileLocation> FileLocationOf(uint64_t addr);

}  // namespace perftest
