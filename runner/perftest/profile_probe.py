"""``perftest doctor --write-profile FILE``: probe this machine and write a
mock arch profile (fixtures/profiles format, mocks/profile.h) that makes
``perftest run --backend=mock --profile=FILE`` imitate it.

write_profile(path) -> dict (the profile JSON, as written to ``path``)

The probe is C++ (tools/write_profile: <build>/bin/perftest_write_profile
FILE), on the harness's own perf_event_attr and KernelBackend, and the
profile is serialized by the code MockBackend loads it with
(mocks/profile.cc WriteProfile), so no fact of the ABI or the model is
encoded here. tools/write_profile/profile_probe.h lists what is probed and
where from.

Errors: UsageError (exit 2) when perftest_write_profile is not built;
ProfileProbeError (a HarnessError) when the probe fails — perf_event_open does
not work at all (no syscall, seccomp, paranoid), or the file cannot be
written — with the tool's own message.
"""

import json
import os
import subprocess

from . import layout
from .errors import HarnessError, UsageError

TOOL = "perftest_write_profile"


class ProfileProbeError(HarnessError):
    pass


def tool_path():
    path = os.path.join(layout.bin_dir(), TOOL)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise UsageError("`perftest doctor --write-profile` needs %s, which is not built (%s)"
                         % (path, layout.BUILD_HINT))
    return path


def write_profile(path, timeout_s=120):
    """Runs the probe, which writes the profile to ``path``; returns it parsed."""
    try:
        done = subprocess.run([tool_path(), path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ProfileProbeError("perftest doctor --write-profile: %s did not finish in %d s"
                                % (TOOL, timeout_s)) from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or (
            "%s exited with status %d" % (TOOL, done.returncode))
        raise ProfileProbeError(message)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise ProfileProbeError("perftest doctor --write-profile: %s wrote no readable profile to %s: %s"
                                % (TOOL, path, e)) from None
