"""Where things are: the repository, the build tree, binaries, mock profiles.

  repo root      the directory holding ``runner/`` (found from this file)
  build tree     $PERFTEST_BUILD_DIR if set, else <repo>/build
  suites         <build>/bin/suite_<name>   (discovered by globbing suite_*)
  benchmarks     <build>/bin/bench_<name>
  mock profiles  $PERFTEST_PROFILES_DIR if set, else <repo>/fixtures/profiles;
                 one <name>.json each with at least "name", "arch", "description"
                 (the C++ loader, mocks/profile.cc, reads the same variable);
                 aliases in <repo>/fixtures/profiles/aliases.txt, the table
                 mocks/profile.cc reads too

Errors: UsageError (exit 2) for an unknown suite, bench or profile, naming the
known ones, and for a missing build ("build first: ./scripts/setup").
"""

import glob
import json
import os

from .errors import UsageError

BUILD_HINT = "build first: ./scripts/setup"
DEFAULT_PROFILE = "software-only"


def repo_root():
    """Absolute path of the repository (parent of runner/)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_dir():
    env = os.environ.get("PERFTEST_BUILD_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.join(repo_root(), "build")


def bin_dir():
    return os.path.join(build_dir(), "bin")


def profiles_dir():
    env = os.environ.get("PERFTEST_PROFILES_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.join(repo_root(), "fixtures", "profiles")


def _discover(prefix):
    """{name: path} for <bin>/<prefix><name> files, sorted by name."""
    found = {}
    for path in sorted(glob.glob(os.path.join(bin_dir(), prefix + "*"))):
        name = os.path.basename(path)[len(prefix):]
        if not name or not os.path.isfile(path):
            continue
        found[name] = path
    return found


def discover_suites():
    """{suite name: binary path} for every <build>/bin/suite_* file."""
    return _discover("suite_")


def discover_benches():
    """{bench name: binary path} for every <build>/bin/bench_* file."""
    return _discover("bench_")


def _check_runnable(kind, path):
    if not os.path.exists(path):
        raise UsageError("%s binary missing: %s (%s)" % (kind, path, BUILD_HINT))
    if not os.access(path, os.X_OK):
        raise UsageError("%s binary is not executable: %s (%s)" % (kind, path, BUILD_HINT))


def resolve_suites(requested):
    """Map requested suite names (None/[] = all) to {name: path}.

    Raises UsageError naming an unknown suite and listing the known ones, or
    saying no suite binaries exist at all.
    """
    known = discover_suites()
    if not requested:
        if not known:
            raise UsageError("no suite binaries found in %s (%s)" % (bin_dir(), BUILD_HINT))
        return known
    out = {}
    for name in requested:
        if name in out:
            continue
        if name not in known:
            expected = os.path.join(bin_dir(), "suite_" + name)
            if known:
                raise UsageError(
                    "unknown suite %r: no %s; known suites: %s"
                    % (name, expected, ", ".join(sorted(known)))
                )
            raise UsageError(
                "unknown suite %r: suite binary missing: %s (%s)" % (name, expected, BUILD_HINT)
            )
        _check_runnable("suite", known[name])
        out[name] = known[name]
    return out


def resolve_bench(name):
    """Path of bench_<name>; UsageError listing the known benchmarks otherwise."""
    known = discover_benches()
    if name not in known:
        expected = os.path.join(bin_dir(), "bench_" + name)
        if known:
            raise UsageError(
                "unknown benchmark %r: no %s; known benchmarks: %s"
                % (name, expected, ", ".join(sorted(known)))
            )
        raise UsageError("benchmark binary missing: %s (%s)" % (expected, BUILD_HINT))
    _check_runnable("benchmark", known[name])
    return known[name]


def profile_aliases():
    """{alias: profile file stem} from <repo>/fixtures/profiles/aliases.txt
    ("ALIAS NAME" lines, '#' comments): profile names kept for users' scripts.
    mocks/profile.cc Aliases() reads the same file."""
    out = {}
    try:
        with open(os.path.join(repo_root(), "fixtures", "profiles", "aliases.txt"), encoding="utf-8") as f:
            for line in f:
                words = line.split("#", 1)[0].split()
                if len(words) >= 2:
                    out[words[0]] = words[1]
    except OSError:
        pass
    return out


def list_profiles():
    """{profile name: path} of the JSON files in the profiles directory."""
    d = profiles_dir()
    return {
        os.path.basename(p)[:-len(".json")]: p
        for p in sorted(glob.glob(os.path.join(d, "*.json")))
    }


def load_profile(spec):
    """Resolve --profile: a profile name, or a path to a profile JSON file.

    Returns (name, absolute path, parsed JSON). Raises UsageError for an
    unknown name (listing the known ones) or a file that is not a profile
    (not JSON, or missing one of "name", "arch", "description").
    """
    known = list_profiles()
    aliases = profile_aliases()
    if spec not in known and aliases.get(spec) in known:
        known[spec] = known[aliases[spec]]
    if spec in known:
        path = known[spec]
    elif (spec.endswith(".json") or os.sep in spec) and os.path.isfile(spec):
        path = os.path.abspath(spec)
    else:
        where = profiles_dir()
        if known:
            raise UsageError(
                "unknown profile %r: no %s.json in %s; known profiles: %s"
                % (spec, spec, where, ", ".join(sorted(known)))
            )
        raise UsageError("unknown profile %r: no profiles found in %s" % (spec, where))
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError("profile %s is not readable JSON: %s" % (path, e)) from None
    if not isinstance(doc, dict):
        raise UsageError("profile %s is not a JSON object" % path)
    missing = [k for k in ("name", "arch", "description") if k not in doc]
    if missing:
        raise UsageError("profile %s lacks required key(s): %s" % (path, ", ".join(missing)))
    if spec in known:
        name = spec
    else:
        name = str(doc.get("name") or os.path.basename(path)[:-len(".json")])
    return name, path, doc
