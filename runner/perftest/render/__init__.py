"""Renderer registry: format name -> Renderer(render, extension, description).

A renderer is a function report dict -> str. ``perftest report --format=X``
offers every key of RENDERERS; ``perftest run`` writes report.json plus the
renderings in RUN_FORMATS. To add HTML, JUnit XML or KTAP, write a module
with a ``render(doc) -> str`` and register it here.
"""

from collections import namedtuple

from . import json_, markdown, text

Renderer = namedtuple("Renderer", "render extension description")

RENDERERS = {
    "md": Renderer(markdown.render, "md", "Markdown: run/host, summary, a table per suite, skips by class"),
    "json": Renderer(json_.render, "json", "the report JSON itself (normalised)"),
    "text": Renderer(text.render, "txt", "the terminal summary"),
}

RUN_FORMATS = ("md",)
