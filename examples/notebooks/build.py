"""Writes the tutorial notebooks from ``examples/tutorials/`` (one source for the scripts
and the notebooks): each step of a tutorial becomes a cell that prints what the seed
prints and ends by drawing the graph it built; a last section shows ``retain_graph`` and
the problem a second backward answers.

    python examples/notebooks/build.py     # rewrites examples/notebooks/*.ipynb

The notebooks read the server from ``GRADSERVE_URL``, else start one from this checkout;
they need the client only (no torch).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
TUTORIALS = HERE.parent / "tutorials"

SETUP = '''\
import os
import sys
from pathlib import Path

ROOT = Path.cwd().resolve().parents[1]  # examples/notebooks -> the checkout
sys.path[:0] = [str(ROOT), str(ROOT / "examples" / "tutorials")]
{runner}from client import LocalServer, Session, Tensor, errors  # noqa: E402

url = os.environ.get("GRADSERVE_URL")
if url is None:  # no server given: start one from this checkout
    server = LocalServer(cwd=ROOT)
    url = server.start()
s = Session(url)
T = s  # reads like the torch module: T.tensor, T.randn, T.no_grad()


def draw(t):
    """The graph that made ``t``, drawn under the cell (nothing for a tensor without one)."""
    return s.graph([t]) if isinstance(t, Tensor) and t.requires_grad else None
'''

# the tutorials' helper for grad_fn's name, as the seed prints it (where one uses it)
RUNNER = "from _runner import grad_fn  # noqa: E402\n\n"

RETAIN_MD = """\
## `retain_graph`, and the error of a second backward

A backward frees the graph's saved tensors unless `retain_graph=True`: the second
backward below works because the first kept the graph; the third meets a freed graph, and
the server answers PyTorch's error as a problem, with a hint that names the fix."""

RETAIN = """\
x = T.tensor([1.0, 2.0], requires_grad=True)
y = (x**2).sum()
y.backward(retain_graph=True)
y.backward()  # the graph was retained: this works, and the grads accumulate
print(x.grad)
draw(y)
"""

SECOND = """\
try:
    y.backward()  # the second backward freed the graph
except errors.GradserveError as err:
    display(err)
"""

CLOSE = """\
s.delete()
s.close()
if os.environ.get("GRADSERVE_URL") is None:
    server.stop()
"""


def steps(source: str) -> list[tuple[str, str | None]]:
    """The tutorial function's body, split at its blank lines: (code, the last name it
    assigns, to draw)."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "tutorial")
    lines = source.splitlines()
    body = textwrap.dedent("\n".join(lines[fn.body[0].lineno - 1 : fn.end_lineno]))
    out: list[tuple[str, str | None]] = []
    chunk: list[str] = []
    rows = body.splitlines()
    for k, line in enumerate(rows):
        if line.strip():
            chunk.append(line)
        following = next((r for r in rows[k + 1 :] if r.strip()), "")
        if chunk and (k + 1 == len(rows) or (not line.strip() and not following[:1].isspace())):
            code = "\n".join(chunk)
            out.append((code, _built(code)))
            chunk = []
    return out


def _built(code: str) -> str | None:
    """The last name the code assigns a computed tensor to (not ``T.tensor(...)`` and the
    like, which have no graph, nor a number such as ``learning_rate = 0.1``)."""
    names = []
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.Assign):
            continue
        value = node.value
        made = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "T"
        )
        if not made and not isinstance(value, ast.Constant):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return names[-1] if names else None


def notebook(script: Path) -> nbformat.NotebookNode:
    source = script.read_text()
    doc = ast.get_docstring(ast.parse(source)) or script.stem
    title, _, rest = doc.partition("\n")
    intro = rest.split("    python ")[0].strip()
    cells = [
        new_markdown_cell(
            f"# {title}\n\n{intro}\n\nThe seed's code, run by a gradserve session: `T` reads "
            "like the `torch` module. Each step prints what the seed prints and draws the "
            "backward graph it built."
        ),
        new_code_cell(SETUP.replace("{runner}", RUNNER if "grad_fn(" in source else "")),
    ]
    drawn = None
    for code, last in steps(source):
        drawn = last or drawn  # a step that builds nothing (a backward) redraws the last graph
        cell = new_code_cell(code + (f"\ndraw({drawn})" if drawn else ""))
        cell.metadata["tags"] = ["tutorial"]
        cells.append(cell)
    cells += [
        new_markdown_cell(RETAIN_MD),
        new_code_cell(RETAIN),
        new_code_cell(SECOND),
        new_code_cell(CLOSE),
    ]
    for i, cell in enumerate(cells):
        cell.source = cell.source.rstrip("\n")  # as ruff formats a cell
        cell.id = f"{script.stem[:2]}-{i:02d}"  # stable: a rebuild changes only what changed
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def main() -> None:
    for script in sorted(TUTORIALS.glob("0*.py")):
        path = HERE / f"{script.stem}.ipynb"
        nbformat.write(notebook(script), path)
        print(path.relative_to(HERE.parents[1]))


if __name__ == "__main__":
    main()
