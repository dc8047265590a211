"""A strict parser of KTAP version 1 (Linux Documentation/dev-tools/ktap.rst),
used to check the KTAP renderer's output against the spec's grammar.

  block    := INDENT "KTAP version 1" diag* plan (diag | result | subtest)*
  plan     := INDENT "1..N"
  subtest  := block (indented one level deeper) followed by its result line
  result   := INDENT ("ok" | "not ok") SP number [SP description] [" # " [directive] [data]]
  diag     := INDENT "#" text

Checks beyond the grammar: one level of indentation is two spaces; numbers
start at 1 and increase by 1 per level; the count matches the plan; the
description has no '#'; TIMEOUT and ERROR results are "not ok"; a parent
with a failing ("not ok", not SKIP) subtest is itself "not ok". This parser
accepts no "unknown lines" (the spec allows them, our renderer never writes
them). parse(text) -> Node of the top level; KtapError on any violation.
"""

import re
from dataclasses import dataclass, field

DIRECTIVES = ("SKIP", "TODO", "XFAIL", "TIMEOUT", "ERROR")
_RESULT = re.compile(r"^(ok|not ok) ([0-9]+)(?: ([^#]*?))?(?: # ?(.*))?$")
_PLAN = re.compile(r"^1\.\.([0-9]+)$")


class KtapError(Exception):
    pass


@dataclass
class Node:
    ok: bool = True
    number: int = 0
    description: str = ""
    directive: str = ""
    data: str = ""
    diagnostics: list = field(default_factory=list)
    plan: int = None
    children: list = field(default_factory=list)


def _split(line):
    stripped = line.lstrip(" ")
    return len(line) - len(stripped), stripped


def parse_result(text):
    """(ok, number, description, directive, data) of a result line's text."""
    m = _RESULT.match(text)
    if not m:
        raise KtapError("not a result line: %r" % text)
    ok = m.group(1) == "ok"
    number = int(m.group(2))
    desc = (m.group(3) or "").strip()
    rest = m.group(4)
    directive, data = "", ""
    if rest is not None:
        word, _, tail = rest.partition(" ")
        if word in DIRECTIVES:
            directive, data = word, tail.strip()
        else:
            data = rest.strip()
    if directive in ("TIMEOUT", "ERROR") and ok:
        raise KtapError("%s result must be 'not ok': %r" % (directive, text))
    return ok, number, desc, directive, data


class _Parser:
    def __init__(self, text):
        if not text.endswith("\n"):
            raise KtapError("output does not end with a newline")
        self.lines = text[:-1].split("\n")
        self.i = 0

    def peek(self):
        return self.lines[self.i] if self.i < len(self.lines) else None

    def block(self, indent):
        """Parse a version line at indent through the last line at that indent."""
        line = self.peek()
        if line is None:
            raise KtapError("expected 'KTAP version 1' at end of output")
        ind, text = _split(line)
        if ind != indent or text != "KTAP version 1":
            raise KtapError("line %d: expected %r, got %r"
                            % (self.i + 1, " " * indent + "KTAP version 1", line))
        self.i += 1
        node = Node()
        pending_diag = []
        while True:
            line = self.peek()
            if line is None:
                break
            ind, text = _split(line)
            if text.startswith("KTAP version"):
                if ind != indent + 2:
                    raise KtapError("line %d: a subtest must be indented by exactly two spaces "
                                    "more than its parent (%d), got %d" % (self.i + 1, indent + 2, ind))
                if node.plan is None:
                    raise KtapError("line %d: subtest before the plan line" % (self.i + 1))
                child = self.block(indent + 2)
                rline = self.peek()
                if rline is None or _split(rline)[0] != indent:
                    raise KtapError("line %d: subtest not followed by its result line at indent %d"
                                    % (self.i + 1, indent))
                self._result(node, child, _split(rline)[1])
                child.diagnostics = pending_diag + child.diagnostics
                pending_diag = []
                continue
            if ind < indent:
                break
            if ind != indent:
                raise KtapError("line %d: indentation %d inside a block at %d: %r"
                                % (self.i + 1, ind, indent, line))
            if text.startswith("#"):
                pending_diag.append(text[1:].strip())
                self.i += 1
                continue
            m = _PLAN.match(text)
            if m:
                if node.plan is not None:
                    raise KtapError("line %d: second plan line" % (self.i + 1))
                if node.children:
                    raise KtapError("line %d: plan after results" % (self.i + 1))
                node.plan = int(m.group(1))
                self.i += 1
                continue
            if text.startswith("ok ") or text.startswith("not ok "):
                child = Node(diagnostics=pending_diag)
                pending_diag = []
                self._result(node, child, text)
                continue
            raise KtapError("line %d: not a KTAP line: %r" % (self.i + 1, line))
        if node.plan is None:
            raise KtapError("block starting before line %d has no plan line" % (self.i + 1))
        if node.plan != len(node.children):
            raise KtapError("plan says 1..%d but %d results follow" % (node.plan, len(node.children)))
        node.diagnostics += pending_diag
        return node

    def _result(self, parent, child, text):
        ok, number, desc, directive, data = parse_result(text)
        expected = len(parent.children) + 1
        if number != expected:
            raise KtapError("line %d: test number %d, expected %d" % (self.i + 1, number, expected))
        if child.children and any(not c.ok and c.directive != "SKIP" for c in child.children) and ok:
            raise KtapError("line %d: %r is ok but one of its subtests is not ok"
                            % (self.i + 1, text))
        child.ok, child.number, child.description = ok, number, desc
        child.directive, child.data = directive, data
        parent.children.append(child)
        self.i += 1


def parse(text):
    """Parse a whole KTAP document; returns the top-level Node."""
    p = _Parser(text)
    root = p.block(0)
    if p.peek() is not None:
        raise KtapError("line %d: trailing output after the top-level block: %r"
                        % (p.i + 1, p.peek()))
    return root
