"""JSON renderer: the report document, pretty-printed."""

import json


def render(doc):
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
