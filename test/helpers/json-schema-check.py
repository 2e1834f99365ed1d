"""Checks --json documents against docs/schema/ with python-jsonschema: a validator written
apart from ajv (test/helpers/json-schema.ts), so a schema is not held to one library's reading.

Usage: python3 json-schema-check.py SCHEMA_DIR < REQUEST_JSON

Every *.schema.json of SCHEMA_DIR is checked against the draft 2020-12 metaschema and loaded
into one registry by its $id (a file without one is an error). REQUEST_JSON is
{"docs": [{"file": "send.schema.json", "doc": {...}, "mutations": [MUTATION, ...]}, ...]};
a mutation is {"path": [key or index, ...], "op": "drop" | "set" | "rename", "value": ...,
"key": new name} and is applied to the document in place, checked, and undone.

Prints one JSON document: {"versions": {...}, "schema_errors": [text, ...],
"docs": [{"error": null or the first error of the document, "accepted": [indices of the
mutations the schema accepted]}, ...]}.
"""

import json
import pathlib
import sys
from importlib.metadata import version

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource

def load(folder):
    """The validator of each schema file, all of them in one registry; and what is wrong."""
    schemas, errors = {}, []
    for path in sorted(folder.glob("*.schema.json")):
        schema = json.loads(path.read_text("utf-8"))
        problem = best_match(Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema))
        if problem is not None:
            errors.append(f"{path.name}: not a draft 2020-12 schema: {problem.message}")
        if "$id" not in schema:
            errors.append(f"{path.name}: no $id")
            continue
        schemas[path.name] = schema
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in schemas.values()
    )
    return {name: Draft202012Validator(s, registry=registry) for name, s in schemas.items()}, errors


def apply(doc, mutation):
    """Applies a mutation in place; returns the function that undoes it."""
    *parents, last = mutation["path"]
    node = doc
    for step in parents:
        node = node[step]
    op = mutation["op"]
    if op == "set":
        old = node[last]
        node[last] = mutation["value"]
        return lambda: node.__setitem__(last, old)
    old = node.pop(last)
    if op == "rename":
        node[mutation["key"]] = old

        def undo():
            node.pop(mutation["key"])
            node[last] = old

        return undo
    return lambda: node.__setitem__(last, old)


def check(validator, item):
    """The first error of a document, and which of its mutations the schema accepted."""
    doc = item["doc"]
    first = best_match(validator.iter_errors(doc))
    error = None
    if first is not None:
        where = "/".join(str(p) for p in first.absolute_path)
        error = f"at /{where}: {first.message}"
    accepted = []
    for i, mutation in enumerate(item.get("mutations", [])):
        undo = apply(doc, mutation)
        try:
            if validator.is_valid(doc):
                accepted.append(i)
        finally:
            undo()
    return {"error": error, "accepted": accepted}


def main():
    validators, errors = load(pathlib.Path(sys.argv[1]))
    request = json.load(sys.stdin)
    docs = []
    for item in request["docs"]:
        validator = validators.get(item["file"])
        if validator is None:
            docs.append({"error": f"no schema {item['file']}", "accepted": []})
        else:
            docs.append(check(validator, item))
    versions = {"jsonschema": version("jsonschema"), "python": sys.version.split()[0]}
    json.dump({"versions": versions, "schema_errors": errors, "docs": docs}, sys.stdout)


if __name__ == "__main__":
    main()
