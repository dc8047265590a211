"""Guest kernels for ``perftest run --vm=KERNEL``: resolve a kernel spec to a
bootable image plus its modules, fetching Debian packages into a cache.

KERNEL is either
  * ``debian:VERSION[-FLAVOUR]`` -- ``debian:6.1``, ``debian:6.12``,
    ``debian:6.1-cloud``, ``debian:6.12-rt``: the newest Debian package
    ``linux-image-VERSION...-[FLAVOUR-]DEBARCH[-unsigned]`` for the guest's
    arch (bookworm for amd64/arm64, trixie for riscv64, which bookworm lacks);
  * a path to a kernel image (bzImage, arm64 Image, riscv64 Image); modules
    are then looked up in ``--vm-modules=DIR`` (a ``lib/modules/RELEASE``
    tree) when given, else the guest gets only what is built in.

Fetching never installs anything on the host and never touches the host's
apt state: every apt call runs with the project's own configuration under
the cache (its own sources list, lists, package cache and empty dpkg status;
one per Debian arch), ``apt-get download`` fetches the ``.deb`` and
``dpkg -x`` unpacks it. The same apt configuration also fetches the guest's
``busybox-static`` for that arch (the initramfs's shell, vmimage.py).

Cache: ``$PERFTEST_KERNEL_CACHE`` or ``$XDG_CACHE_HOME/perftest/kernels``
(default ``~/.cache/perftest/kernels``):
  apt/DEBARCH/          the apt configuration and state for that arch
  debs/                 downloaded packages
  pkgs/PACKAGE_VERSION/ unpacked (``root/``) with ``kernel.json``
  resolved.json         spec -> package, so a second run needs no apt at all

Errors: UsageError (exit 2) for a spec that is not understood, an image path
that does not exist, an unknown arch; HarnessError (exit 3) when apt cannot
find or download the package (the message has apt's own words).
"""

import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib

from .errors import HarnessError, UsageError

ARCHES = ("x86_64", "arm64", "riscv64")
DEB_ARCH = {"x86_64": "amd64", "arm64": "arm64", "riscv64": "riscv64"}
# Debian release per guest arch: bookworm has no riscv64 kernel, trixie does.
DEB_SUITES = {
    "amd64": ("bookworm", ["bookworm", "bookworm-updates"], "bookworm-security"),
    "arm64": ("bookworm", ["bookworm", "bookworm-updates"], "bookworm-security"),
    "riscv64": ("trixie", ["trixie", "trixie-updates"], "trixie-security"),
}
MIRROR = "http://deb.debian.org/debian"
SECURITY_MIRROR = "http://deb.debian.org/debian-security"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# apt lists older than this are refreshed before a new package is resolved.
LISTS_MAX_AGE_S = 7 * 24 * 3600

_SPEC_RE = re.compile(r"^debian:(?P<version>[0-9]+\.[0-9]+)(?:-(?P<flavour>[a-z0-9]+))?$")


def host_arch():
    """The host's arch in --arch spelling (x86_64, arm64, riscv64, or uname's)."""
    m = os.uname().machine
    return {"aarch64": "arm64"}.get(m, m)


def normalize_arch(arch):
    """'aarch64' -> 'arm64', 'amd64' -> 'x86_64'; UsageError for others."""
    a = {"aarch64": "arm64", "amd64": "x86_64", "x86-64": "x86_64", "riscv": "riscv64"}.get(
        arch, arch)
    if a not in ARCHES:
        raise UsageError("--arch=%s: not a guest arch perftest knows (one of %s)"
                         % (arch, ", ".join(ARCHES)))
    return a


def cache_dir():
    d = os.environ.get("PERFTEST_KERNEL_CACHE")
    if d:
        return os.path.abspath(d)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "perftest", "kernels")


def say(msg):
    print("perftest: %s" % msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- apt, our own

class Apt:
    """apt-get/apt-cache with the project's own configuration for one Debian
    arch (sources, lists, archives, empty dpkg status under the cache)."""

    def __init__(self, debarch, root=None):
        self.debarch = debarch
        self.dir = os.path.join(root or cache_dir(), "apt", debarch)

    def _setup(self):
        release, suites, security = DEB_SUITES[self.debarch]
        for d in ("state/lists/partial", "cache/archives/partial", "sources.list.d",
                  "preferences.d", "apt.conf.d"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        status = os.path.join(self.dir, "state", "status")
        if not os.path.exists(status):
            open(status, "w").close()
        mirror = os.environ.get("PERFTEST_DEBIAN_MIRROR", MIRROR)
        sec = os.environ.get("PERFTEST_DEBIAN_SECURITY_MIRROR", SECURITY_MIRROR)
        lines = ["deb [signed-by=%s] %s %s main" % (KEYRING, mirror, s) for s in suites]
        lines.append("deb [signed-by=%s] %s %s main" % (KEYRING, sec, security))
        with open(os.path.join(self.dir, "sources.list"), "w") as f:
            f.write("# written by perftest (runner/perftest/vmkernel.py); the host's apt "
                    "is not used\n" + "\n".join(lines) + "\n")

    def options(self):
        d = self.dir
        opts = {
            "Dir::Etc::SourceList": os.path.join(d, "sources.list"),
            "Dir::Etc::SourceParts": os.path.join(d, "sources.list.d"),
            "Dir::Etc::Preferences": os.path.join(d, "preferences"),
            "Dir::Etc::PreferencesParts": os.path.join(d, "preferences.d"),
            "Dir::Etc::Parts": os.path.join(d, "apt.conf.d"),
            "Dir::State": os.path.join(d, "state"),
            "Dir::State::status": os.path.join(d, "state", "status"),
            "Dir::Cache": os.path.join(d, "cache"),
            "APT::Architecture": self.debarch,
            "APT::Architectures": self.debarch,
            "APT::Sandbox::User": "root" if os.geteuid() == 0 else "",
            "Acquire::Languages": "none",
        }
        out = []
        for k, v in opts.items():
            out += ["-o", "%s=%s" % (k, v)]
        return out

    def _run(self, tool, args, cwd=None):
        argv = [tool] + self.options() + list(args)
        try:
            p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, timeout=900)
        except FileNotFoundError:
            raise HarnessError("%s not found: fetching Debian kernels needs apt "
                               "(a Debian machine)" % tool) from None
        except subprocess.TimeoutExpired:
            raise HarnessError("%s %s did not finish within 15 minutes" % (tool, " ".join(args)))
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode(
            "utf-8", "replace")

    def lists_age(self):
        lists = os.path.join(self.dir, "state", "lists")
        try:
            files = [os.path.join(lists, f) for f in os.listdir(lists) if "Packages" in f]
        except OSError:
            return None
        if not files:
            return None
        return time.time() - max(os.path.getmtime(f) for f in files)

    def update(self):
        self._setup()
        say("apt-get update for %s (the project's own apt state in %s)" % (self.debarch, self.dir))
        rc, out, err = self._run("apt-get", ["update", "-q"])
        if self.lists_age() is None:
            raise HarnessError("apt-get update for %s failed (exit %d): %s"
                               % (self.debarch, rc, (err or out).strip()[-800:]))
        if rc != 0:     # e.g. one index mid-sync on the mirror: the others are usable
            errors = [l for l in (err or "").splitlines() if l.startswith("E:")]
            say("apt-get update for %s: some indexes failed, going on with the others: %s"
                % (self.debarch, "; ".join(errors)[-400:]))

    def ensure_lists(self, refresh=False):
        age = self.lists_age()
        if refresh or age is None or age > LISTS_MAX_AGE_S:
            self.update()

    def search(self, regex):
        """Package names matching regex (apt-cache search --names-only)."""
        rc, out, err = self._run("apt-cache", ["search", "--names-only", regex])
        if rc != 0:
            raise HarnessError("apt-cache search %r failed: %s" % (regex, err.strip()[-400:]))
        return [line.split(" - ", 1)[0].strip() for line in out.splitlines() if line.strip()]

    def version(self, package):
        rc, out, err = self._run("apt-cache", ["show", "--no-all-versions", package])
        m = re.search(r"^Version: (\S+)", out, re.MULTILINE)
        if rc != 0 or not m:
            raise HarnessError("apt-cache show %s: no version (%s)" % (package, err.strip()[-300:]))
        return m.group(1)

    def download(self, package, dest):
        """Path of PACKAGE's .deb in dest (downloaded unless already there)."""
        os.makedirs(dest, exist_ok=True)
        version = self.version(package)
        want = "%s_%s_" % (package, version.replace(":", "%3a"))
        # debs/ holds every arch's packages: the name ends with the arch.
        ends = ("_%s.deb" % self.debarch, "_all.deb")
        for f in os.listdir(dest):
            if f.startswith(want) and f.endswith(ends):
                return os.path.join(dest, f)
        say("downloading %s %s (%s)" % (package, version, self.debarch))
        rc, out, err = self._run("apt-get", ["download", "-q", "%s:%s" % (package, self.debarch)],
                                 cwd=dest)
        for f in os.listdir(dest):
            if f.startswith(want) and f.endswith(ends):
                return os.path.join(dest, f)
        raise HarnessError("apt-get download %s failed (exit %d): %s"
                           % (package, rc, (err or out).strip()[-600:]))


def natural_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def package_regex(version, flavour, debarch):
    """apt-cache regex for the kernel image packages of VERSION (6.1 must not
    match 6.12: the next character is '.' or '-')."""
    flav = (re.escape(flavour) + "-") if flavour else ""
    return r"^linux-image-%s[.-][0-9a-z.+~-]*-%s%s(-unsigned)?$" % (
        re.escape(version), flav, re.escape(debarch))


def pick_package(names, version, flavour, debarch):
    """The newest image package among apt-cache's names for this spec, or None.
    Debug, template and signed-template packages are not images."""
    rx = re.compile(package_regex(version, flavour, debarch))
    ok = [n for n in names if rx.match(n) and "-dbg" not in n and "template" not in n]
    if not flavour:                     # debian:6.1 is the plain flavour, not cloud/rt
        ok = [n for n in ok if not re.search(r"-(cloud|rt)-%s" % re.escape(debarch), n)]
    if not ok:
        return None
    # Prefer -unsigned (the same image; the signed one lives in another package).
    ok.sort(key=lambda n: (natural_key(n.replace("-unsigned", "")), n.endswith("-unsigned")))
    return ok[-1]


def parse_spec(spec):
    """('debian', version, flavour) or ('path', abspath, None). UsageError."""
    m = _SPEC_RE.match(spec or "")
    if m:
        return "debian", m.group("version"), m.group("flavour")
    if spec.startswith("debian:"):
        raise UsageError("--vm=%s: a Debian kernel is debian:VERSION[-FLAVOUR], e.g. "
                         "debian:6.1, debian:6.12, debian:6.1-cloud, debian:6.12-rt" % spec)
    path = os.path.abspath(os.path.expanduser(spec))
    if not os.path.isfile(path):
        raise UsageError("--vm=%s: not a kernel image file, nor debian:VERSION[-FLAVOUR] "
                         "(e.g. debian:6.1)" % spec)
    return "path", path, None


# ---------------------------------------------------------------- unpacked kernels

def _find_modules_dir(root):
    for base in ("lib/modules", "usr/lib/modules"):
        d = os.path.join(root, base)
        if os.path.isdir(d):
            rels = sorted(os.listdir(d))
            if rels:
                return os.path.join(d, rels[-1]), rels[-1]
    return None, None


def _find_image(root, release, arch):
    boot = os.path.join(root, "boot")
    names = ["vmlinux-%s" % release, "vmlinuz-%s" % release] if arch == "riscv64" else [
        "vmlinuz-%s" % release, "vmlinux-%s" % release]
    for n in names:
        p = os.path.join(boot, n)
        if os.path.isfile(p):
            return p
    return None


def unpack(deb, dest):
    """dpkg -x deb dest (into a temporary directory renamed on success)."""
    tmp = dest + ".%d.part" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    p = subprocess.run(["dpkg", "-x", deb, tmp], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HarnessError("dpkg -x %s failed: %s" % (deb, p.stderr.decode("utf-8", "replace")
                                                      .strip()[-400:]))
    try:
        os.rename(tmp, dest)
    except OSError:                 # another run unpacked it meanwhile: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.isdir(dest):
            raise


def _load_resolved(root):
    try:
        with open(os.path.join(root, "resolved.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _save_resolved(root, data):
    os.makedirs(root, exist_ok=True)
    tmp = os.path.join(root, "resolved.json.%d.tmp" % os.getpid())
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    os.replace(tmp, os.path.join(root, "resolved.json"))


def fetch_package(debarch, package, refresh=False):
    """Unpacked root of PACKAGE (arch debarch) in the cache: (root, version)."""
    root = cache_dir()
    apt = Apt(debarch, root)
    apt.ensure_lists(refresh)
    version = apt.version(package)
    dest = os.path.join(root, "pkgs", "%s_%s_%s" % (package, version, debarch))
    if not os.path.isdir(os.path.join(dest, "root")):
        deb = apt.download(package, os.path.join(root, "debs"))
        os.makedirs(dest, exist_ok=True)
        unpack(deb, os.path.join(dest, "root"))
    return os.path.join(dest, "root"), version


def fetch_debian(version, flavour, arch, refresh=False):
    """Resolve debian:VERSION[-FLAVOUR] for arch, fetching when needed.
    Returns the kernel dict (see resolve)."""
    debarch = DEB_ARCH[arch]
    root = cache_dir()
    key = "debian:%s%s/%s" % (version, "-" + flavour if flavour else "", arch)
    resolved = _load_resolved(root)
    hit = resolved.get(key)
    if hit and not refresh and os.path.isfile(hit.get("image", "")):
        return hit
    apt = Apt(debarch, root)
    apt.ensure_lists(refresh)
    names = apt.search(package_regex(version, flavour, debarch))
    package = pick_package(names, version, flavour, debarch)
    if package is None and not refresh and (apt.lists_age() or 0) > 3600:
        apt.update()
        names = apt.search(package_regex(version, flavour, debarch))
        package = pick_package(names, version, flavour, debarch)
    if package is None:
        raise HarnessError(
            "no Debian kernel package for %s (%s %s): apt-cache search %r found %s"
            % (key, DEB_SUITES[debarch][0], debarch, package_regex(version, flavour, debarch),
               ", ".join(names[:8]) or "nothing"))
    pkg_root, pkg_version = fetch_package(debarch, package, refresh)
    mods, release = _find_modules_dir(pkg_root)
    if release is None:
        raise HarnessError("%s has no lib/modules/RELEASE directory" % package)
    image = _find_image(pkg_root, release, arch)
    if image is None:
        raise HarnessError("%s has no /boot/vmlinuz-%s" % (package, release))
    kernel = {
        "spec": key.split("/")[0],
        "source": "debian",
        "package": package,
        "package_version": pkg_version,
        "debian_release": DEB_SUITES[debarch][0],
        "arch": arch,
        "release": release,
        "image": image,
        "modules": mods,
    }
    resolved[key] = kernel
    _save_resolved(root, resolved)
    return kernel


def resolve(spec, arch, modules_dir=None, refresh=False):
    """The kernel for --vm=SPEC --arch=ARCH as a dict: spec, source
    ('debian' or 'path'), package, package_version, arch, release (None when
    unknown), image (path), modules (a lib/modules/RELEASE dir or None)."""
    kind, what, flavour = parse_spec(spec)
    if kind == "debian":
        return fetch_debian(what, flavour, arch, refresh)
    release = None
    mods = None
    if modules_dir:
        mods = os.path.abspath(modules_dir)
        if not os.path.isfile(os.path.join(mods, "modules.dep")):
            sub, release = _find_modules_dir(mods)
            if sub is None:
                raise UsageError("--vm-modules=%s: no modules.dep there nor in "
                                 "lib/modules/RELEASE below it" % modules_dir)
            mods = sub
        else:
            release = os.path.basename(mods.rstrip("/"))
    return {"spec": spec, "source": "path", "package": None, "package_version": None,
            "arch": arch, "release": release, "image": what, "modules": mods}


def bzimage_payload(data):
    """The compressed kernel inside an x86 bzImage: (bytes, 'xz'|'zstd'|'gzip'
    |'lz4'|...) from the boot protocol's setup header (setup_sects at 0x1f1,
    payload_offset/payload_length at 0x248/0x24c, relative to the protected-
    mode code after the (setup_sects + 1) * 512 setup bytes;
    Documentation/arch/x86/boot.rst). ValueError when data is not a bzImage."""
    if len(data) < 0x260 or data[0x202:0x206] != b"HdrS":
        raise ValueError("not a bzImage (no HdrS boot header)")
    setup_sects = data[0x1F1] or 4
    off, length = struct.unpack_from("<II", data, 0x248)
    start = (setup_sects + 1) * 512 + off
    payload = data[start:start + length]
    for magic, kind in ((b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"),
                        (b"\x1f\x8b", "gzip")):
        if payload.startswith(magic):
            return payload, kind
    raise ValueError("bzImage payload compressed with an unsupported method (%r)"
                     % payload[:4])


def pvh_vmlinux(image, dest):
    """Decompress an x86 bzImage into dest (an ELF vmlinux): QEMU then boots
    it through its PVH entry (CONFIG_PVH, Xen ELF note PHYS32_ENTRY), without
    SeaBIOS and without decompressing the kernel under TCG: about 10 s less
    per boot here. Returns dest, or None when that cannot be done (the
    bzImage is then booted as it is)."""
    if os.path.isfile(dest):
        return dest
    try:
        with open(image, "rb") as f:
            payload, kind = bzimage_payload(f.read())
        if kind == "xz":
            elf = lzma.LZMADecompressor().decompress(payload)
        elif kind == "gzip":
            elf = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(payload)
        else:
            p = subprocess.run(["zstd", "-dc"], input=payload, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            elf = p.stdout
    except (OSError, ValueError, lzma.LZMAError, zlib.error):
        return None
    if elf[:4] != b"\x7fELF":
        return None
    with open(dest + ".%d.tmp" % os.getpid(), "wb") as f:
        f.write(elf)
    os.replace(dest + ".%d.tmp" % os.getpid(), dest)
    return dest


def busybox(arch, refresh=False):
    """Path of a static busybox for arch: Debian's busybox-static package of
    that arch, fetched with the same apt configuration as the kernels
    ($PERFTEST_VM_BUSYBOX: a given one instead)."""
    given = os.environ.get("PERFTEST_VM_BUSYBOX")
    if given:                       # offline use and the runner's tests
        return os.path.abspath(given)
    debarch = DEB_ARCH[arch]
    root, _ = fetch_package(debarch, "busybox-static", refresh)
    for p in ("bin/busybox", "usr/bin/busybox"):
        if os.path.isfile(os.path.join(root, p)):
            return os.path.join(root, p)
    raise HarnessError("busybox-static (%s) has no bin/busybox" % debarch)


def main(argv=None):
    """scripts/fetch-kernel KERNEL [--arch=ARCH] [--refresh]: fetch into the
    cache and print the kernel as JSON."""
    import argparse
    p = argparse.ArgumentParser(
        prog="fetch-kernel",
        description="Fetch a Debian kernel package (apt-get download + dpkg -x, the host's "
                    "apt untouched) and busybox-static for a perftest guest into the cache "
                    "($PERFTEST_KERNEL_CACHE, default ~/.cache/perftest/kernels); print it "
                    "as JSON.")
    p.add_argument("kernel", metavar="KERNEL", help="debian:VERSION[-FLAVOUR], e.g. debian:6.1")
    p.add_argument("--arch", default=None, help="x86_64 (default: this host's), arm64, riscv64")
    p.add_argument("--refresh", action="store_true", help="apt-get update first")
    args = p.parse_args(argv)
    try:
        arch = normalize_arch(args.arch or host_arch())
        k = resolve(args.kernel, arch, refresh=args.refresh)
        k["busybox"] = busybox(arch)
    except (UsageError, HarnessError) as e:
        print("fetch-kernel: error: %s" % e, file=sys.stderr)
        return e.exit_code
    print(json.dumps(k, indent=2))
    return 0
