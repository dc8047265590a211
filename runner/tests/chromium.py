"""Headless Chromium for the tests that check what a browser draws (the HTML
report, the matrix page, the profiler's flame graph): where it is, and one
way to run it on a local file."""

import os
import shutil
import subprocess

# The browser, or None: tests that need it are skipped with SKIP_REASON.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
SKIP_REASON = "headless Chromium not installed (apt-get install chromium)"


def run_headless(page, profile_dir, *args, timeout=60):
    """Open file://`page` in headless Chromium with `args` (e.g.
    "--dump-dom", "--screenshot=PNG"); `profile_dir` is a fresh directory for
    the browser's profile. Returns the CompletedProcess (text). No network:
    this machine's closed network refuses Chromium's background connections,
    so every one of them is switched off."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--user-data-dir=%s" % profile_dir] + list(args) + ["file://" + page],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
