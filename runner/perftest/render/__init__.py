"""Renderer registry: format name -> Renderer(render, extension, description).

A renderer is a function report dict -> str. ``perftest report --format=X``
offers every key of RENDERERS; ``perftest run`` writes report.json plus the
renderings in RUN_FORMATS (file name ``report.<extension>``). A renderer must
accept every 1.x report: keys added after 1.0 are read with ``.get``.
"""

import importlib


class Renderer:
    """A format: its module (imported on first use, so the command line
    starts fast), the file extension of its rendering, a description."""

    def __init__(self, module, extension, description):
        self.module = module
        self.extension = extension
        self.description = description

    def render(self, doc, **kw):
        return importlib.import_module("." + self.module, __name__).render(doc, **kw)


RENDERERS = {
    "md": Renderer("markdown", "md", "Markdown: run/host, summary, a table per suite, skips by class"),
    "json": Renderer("json_", "json", "the report JSON itself (normalised)"),
    "text": Renderer("text", "txt", "the terminal summary"),
    "html": Renderer("html", "html", "one self-contained HTML page: summary, chart, "
                                     "filterable table per suite"),
    "junit": Renderer("junit", "junit.xml", "JUnit XML for GitHub/GitLab/Jenkins"),
    "ktap": Renderer("ktap", "ktap", "KTAP version 1 (kselftest/KernelCI)"),
}

RUN_FORMATS = ("md", "html", "junit", "ktap")
