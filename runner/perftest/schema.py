"""A small JSON Schema validator (stdlib only) for the report schema.

Supports the subset report.schema.json uses: type (string or list; "integer"
excludes bool, "number" accepts ints), enum, const, required, properties,
additionalProperties (bool or schema), items, minimum, minLength, pattern,
and local "$ref": "#/$defs/NAME".

validate(instance, schema) -> [str]: one message per problem, each starting
with the JSON path of the offending value ("$.cases[3].status: ..."); an
empty list means valid.
"""

import re

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _resolve(ref, root):
    if not ref.startswith("#/"):
        raise ValueError("only local $ref supported: %r" % ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate(instance, schema, root=None, path="$"):
    """All problems of instance against schema, as 'path: message' strings."""
    root = schema if root is None else root
    if "$ref" in schema:
        return validate(instance, _resolve(schema["$ref"], root), root, path)
    errors = []
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_TYPES[t](instance) for t in names):
            return ["%s: expected %s, got %s" % (path, " or ".join(names), _short(instance))]
    if "const" in schema and instance != schema["const"]:
        errors.append("%s: must be %r, got %s" % (path, schema["const"], _short(instance)))
    if "enum" in schema and instance not in schema["enum"]:
        errors.append("%s: %s is not one of %s" % (path, _short(instance), ", ".join(
            repr(e) for e in schema["enum"])))
    if isinstance(instance, str):
        if "minLength" in schema and len(instance) < schema["minLength"]:
            errors.append("%s: shorter than %d characters" % (path, schema["minLength"]))
        if "pattern" in schema and not re.search(schema["pattern"], instance):
            errors.append("%s: %s does not match %s" % (path, _short(instance), schema["pattern"]))
    if _TYPES["number"](instance) and "minimum" in schema and instance < schema["minimum"]:
        errors.append("%s: %r is less than %r" % (path, instance, schema["minimum"]))
    if isinstance(instance, dict):
        for key in schema.get("required", []):
            if key not in instance:
                errors.append("%s: missing required key %r" % (path, key))
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, value in instance.items():
            sub = "%s.%s" % (path, key)
            if key in props:
                errors += validate(value, props[key], root, sub)
            elif extra is False:
                errors.append("%s: unexpected key" % sub)
            elif isinstance(extra, dict):
                errors += validate(value, extra, root, sub)
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            errors += validate(item, schema["items"], root, "%s[%d]" % (path, i))
    return errors
