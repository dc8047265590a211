"""Forward a subcommand to a C++ tool in the build tree.

`perftest pt ARGS` runs <build>/bin/perftest_pt ARGS (Intel PT dump, decode,
record); `perftest fidelity ARGS` runs <build>/bin/perftest_fidelity ARGS (the
kernel-vs-mock differential check). The tool's output and exit code are
passed through unchanged.
"""

import os
import subprocess

from . import layout
from .errors import UsageError

TOOLS = {
    "pt": "perftest_pt",
    "fidelity": "perftest_fidelity",
}


def tool_path(command):
    """Path of the binary behind `command`; UsageError when it is not built."""
    path = os.path.join(layout.bin_dir(), TOOLS[command])
    if not os.path.isfile(path):
        raise UsageError("`perftest %s` needs %s, which is not built (%s)"
                         % (command, path, layout.BUILD_HINT))
    if not os.access(path, os.X_OK):
        raise UsageError("%s is not executable" % path)
    return path


def run_tool(command, args):
    """Runs the tool with `args`; returns its exit code (128+N when killed by signal N)."""
    rc = subprocess.call([tool_path(command)] + list(args))
    return 128 - rc if rc < 0 else rc
