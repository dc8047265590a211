"""The guest's initramfs: a static busybox, vm/guest/init, vm/guest/run-cases
and the kernel modules the guest needs for its 9p shares, as an uncompressed
cpio (newc) archive the kernel unpacks fastest (no decompression under TCG).

build_initramfs(kernel, busybox, arch) -> path (cached by content hash under
<cache>/initramfs/).

Modules: Debian's kernel packages carry no modules.dep (depmod runs when the
package is installed, which we never do), so the dependencies come from each
module's own ``.modinfo`` section (``depends=a,b``), read from the ELF file
(compressed ``.ko.xz`` files are decompressed with lzma). Modules built into
the image (``modules.builtin``) are skipped. The load order is dependencies
first; init loads them with busybox insmod from /modules.load.
"""

import hashlib
import lzma
import gzip
import os
import struct
import subprocess

from .errors import HarnessError
from . import layout, vmkernel

# What a guest needs: virtio over PCI and the 9p filesystem over virtio.
WANTED_MODULES = ("virtio_pci", "9pnet_virtio", "9p")


def guest_dir():
    return os.path.join(layout.repo_root(), "vm", "guest")


def _read_module(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".xz"):
        return lzma.decompress(data)
    if path.endswith(".gz"):
        return gzip.decompress(data)
    if path.endswith(".zst"):
        p = subprocess.run(["zstd", "-dc", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise HarnessError("cannot decompress %s (zstd): %s" % (path, p.stderr[-200:]))
        return p.stdout
    return data


def modinfo(elf):
    """{key: [values]} from an ELF64 module's .modinfo section (NUL-separated
    key=value strings)."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not an ELF64 object")
    endian = "<" if elf[5] == 1 else ">"
    shoff, = struct.unpack_from(endian + "Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(endian + "HHH", elf, 0x3A)

    def section(i):
        name, _typ, _flags, _addr, off, size = struct.unpack_from(
            endian + "IIQQQQ", elf, shoff + i * shentsize)
        return name, off, size

    _, stroff, _ = section(shstrndx)
    out = {}
    for i in range(shnum):
        name, off, size = section(i)
        end = elf.index(b"\0", stroff + name)
        if elf[stroff + name:end] != b".modinfo":
            continue
        for item in elf[off:off + size].split(b"\0"):
            if b"=" in item:
                k, v = item.decode("utf-8", "replace").split("=", 1)
                out.setdefault(k, []).append(v)
    return out


def _module_index(modules_dir):
    """{normalised name: path} for every module file under modules_dir."""
    index = {}
    for dirpath, _dirs, files in os.walk(modules_dir):
        for f in files:
            for ext in (".ko", ".ko.xz", ".ko.gz", ".ko.zst"):
                if f.endswith(ext):
                    index[f[:-len(ext)].replace("-", "_")] = os.path.join(dirpath, f)
    return index


def _builtin(modules_dir):
    names = set()
    try:
        with open(os.path.join(modules_dir, "modules.builtin")) as f:
            for line in f:
                base = os.path.basename(line.strip())
                if base.endswith(".ko"):
                    names.add(base[:-3].replace("-", "_"))
    except OSError:
        pass
    return names


def module_closure(modules_dir, wanted=WANTED_MODULES):
    """[(name, elf bytes)] for wanted and their dependencies, dependencies
    first; names built into the image are left out."""
    index = _module_index(modules_dir)
    builtin = _builtin(modules_dir)
    order, seen, blobs = [], set(), {}

    def visit(name, chain):
        name = name.replace("-", "_")
        if name in seen or name in builtin:
            return
        if name not in index:
            if name in wanted:   # not a module: assume built in
                return
            raise HarnessError("module %s (needed by %s) is not in %s"
                               % (name, " <- ".join(chain), modules_dir))
        seen.add(name)
        elf = _read_module(index[name])
        for dep in (modinfo(elf).get("depends") or [""])[0].split(","):
            if dep:
                visit(dep, chain + [name])
        blobs[name] = elf
        order.append(name)

    for w in wanted:
        visit(w, [w])
    return [(n, blobs[n]) for n in order]


def _newc_entry(name, mode, data=b"", ino=1):
    name_b = name.encode() + b"\0"
    hdr = "070701" + "".join("%08X" % v for v in (
        ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name_b), 0))
    out = hdr.encode() + name_b
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def write_cpio(path, entries):
    """entries: [(name, mode, bytes)] (directories with mode 0o040755 and no
    data) -> an uncompressed newc archive at path."""
    with open(path + ".%d.tmp" % os.getpid(), "wb") as f:
        for i, (name, mode, data) in enumerate(entries):
            f.write(_newc_entry(name, mode, data, ino=i + 1))
        f.write(_newc_entry("TRAILER!!!", 0, b"", ino=0))
    os.replace(path + ".%d.tmp" % os.getpid(), path)


def build_initramfs(kernel, busybox_path, cache=None):
    """The initramfs for kernel (a vmkernel.resolve dict): path of a cached
    cpio with /init, /run-cases, /bin/busybox, /lib/modules/*.ko and
    /modules.load."""
    mods = module_closure(kernel["modules"]) if kernel.get("modules") else []
    files = {}
    for name in ("init", "run-cases"):
        with open(os.path.join(guest_dir(), name), "rb") as f:
            files[name] = f.read()
    with open(busybox_path, "rb") as f:
        bb = f.read()
    h = hashlib.sha256()
    for blob in [files["init"], files["run-cases"], bb] + [m[1] for m in mods]:
        h.update(hashlib.sha256(blob).digest())
    out_dir = os.path.join(cache or vmkernel.cache_dir(), "initramfs")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "%s-%s-%s.cpio" % (
        kernel["arch"], kernel.get("release") or "image", h.hexdigest()[:16]))
    if os.path.isfile(path):
        return path
    d = 0o040755
    entries = [(n, d, b"") for n in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "proc", "sys",
                                     "dev", "tmp", "host", "pt", "lib", "lib/modules", "etc")]
    entries += [("init", 0o100755, files["init"]), ("run-cases", 0o100755, files["run-cases"]),
                ("bin/busybox", 0o100755, bb),
                ("modules.load", 0o100644, "".join("%s.ko\n" % n for n, _ in mods).encode())]
    entries += [("lib/modules/%s.ko" % n, 0o100644, blob) for n, blob in mods]
    write_cpio(path, entries)
    return path
