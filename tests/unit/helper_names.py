"""rat_helper.py and rat_guard.py run in one namespace (the module `_rat`),
the guard after the helper: a function or class defined twice at top level
replaces the first for every caller, silently (a cell-interrupt function
named `_cut` once replaced the helper's text cutter, and every `look` value
read `<repr failed: TypeError>`). This fails on any such second definition,
within a file or across the two."""
import ast
import os
import sys

KSPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kernelspec")

seen = {}
clashes = []
for name in ("rat_helper.py", "rat_guard.py"):
    path = os.path.join(KSPEC, name)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            where = f"{name}:{node.lineno}"
            if node.name in seen:
                clashes.append(f"{node.name}: {seen[node.name]} and {where}")
            else:
                seen[node.name] = where

if clashes:
    print("defined twice in the module `_rat`:\n  " + "\n  ".join(clashes), file=sys.stderr)
    sys.exit(1)
print(f"ok: {len(seen)} top-level functions and classes, each defined once")
