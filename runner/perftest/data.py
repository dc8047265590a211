"""`perftest data ARGS`: perf.data files, forwarded to <build>/bin/perftest_data.

`perftest data dump FILE` lists every record of a perf.data file (file or
pipe mode) as `perf report -D` does, with the header's feature sections
first and the count of each record type, unknown ones included, last;
`perftest data rewrite IN OUT [--pipe]` reads a file and writes it back
(harness/perf_data/writer.h says what is rewritten). The tool's output and
exit code pass through unchanged (2: bad usage or a truncated or corrupt
file, the message naming the byte offset and the record).
"""

import os
import subprocess

from . import layout
from .errors import UsageError

BINARY = "perftest_data"


def tool_path():
    """Path of perftest_data in the build tree; UsageError when it is not built."""
    path = os.path.join(layout.bin_dir(), BINARY)
    if not os.path.isfile(path):
        raise UsageError("`perftest data` needs %s, which is not built (%s)" % (path, layout.BUILD_HINT))
    if not os.access(path, os.X_OK):
        raise UsageError("%s is not executable" % path)
    return path


def run(args):
    """Runs perftest_data with `args`; returns its exit code (128+N when killed by signal N)."""
    rc = subprocess.call([tool_path()] + list(args))
    return 128 - rc if rc < 0 else rc
