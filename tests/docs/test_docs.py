"""Docs that run: every code block of every README.md runs as written.

Blocks are taken from the files by their fence's language: ``sh``/``bash`` blocks run
with bash against a live server (``B=`` pointing to it, in order, so later blocks see
the sessions earlier ones made), ``python`` blocks run with the repository on
``sys.path`` (the URL ``http://127.0.0.1:8000`` pointing to the server); what a
``print(...)`` shows in its comment (``print(x.grad)  # tensor([2., 4.])``) must be
what it printed, in order. examples/README.md's blocks run from the repository root,
as they say (bench/README.md's too). An expected
output in comments after a command (``# {...}``, ``# [...]``, ``# HTTP/1.1 ...``, ``# 409
...``) is checked: as JSON when it is JSON, else each piece between ``...`` must appear
in what the command printed; a command without one must succeed, ``curl`` included
(it runs as ``curl -f``: an HTTP error fails the block). A block that
must not run says why in a ``<!-- not run: reason -->`` comment right before it;
``text`` blocks are not code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "client/README.md", "examples/README.md", "bench/README.md"]
FROM_ROOT = {"examples/README.md", "bench/README.md"}  # blocks run in the repository's root
RUNNABLE = {"sh", "bash", "python"}
DOC_URL = "http://127.0.0.1:8000"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[ \t]*$")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>.+?)\s*-->")
# a comment after a command that shows its answer: JSON, a status line, response headers
EXPECTED = re.compile(r"^# (\{|\[|HTTP/|\d{3} )")
# a print whose comment shows what it prints (not prose): ``print(x.grad)  # tensor([2., 4.])``
PRINTED = re.compile(r"^\s*print\(.*\)\s+# (?P<shown>(?:tensor\(|[\[{(\d'\"-]|True|False|None).*)$")
# curl for a command whose answer the block does not show: an HTTP error fails the block
# (``curl -s`` alone exits 0 on a 404); a command with a shown answer is compared instead
STRICT_CURL = (
    'curl() { if [[ $STRICT == 1 ]]; then command curl -f "$@"; else command curl "$@"; fi; }'
)


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> list[Block]:
    """The fenced code blocks of ``doc``, dedented, with their not-run reason if any."""
    lines = (ROOT / doc).read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m["indent"], m["lang"], i
        body: list[str] = []
        i += 1
        while not lines[i].strip().startswith("```"):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        reason = NOT_RUN.search(before)
        found.append(
            Block(
                doc, start + 1, lang, "\n".join(body) + "\n", reason["reason"] if reason else None
            )
        )
        i += 1
    return found


ALL = [b for doc in DOCS for b in blocks(doc)]


def test_every_readme_is_a_doc() -> None:
    """A new README.md is run too (found in the tree, beside the tests' own list)."""

    def ours(parts: tuple[str, ...]) -> bool:  # not a tool's (.venv, caches, node_modules)
        return parts[0] != "tests" and not any(
            p.startswith(".") or p in ("node_modules", "build", "dist") for p in parts
        )

    found = {
        str(p.relative_to(ROOT)) for p in ROOT.rglob("README.md") if ours(p.relative_to(ROOT).parts)
    }
    assert found <= set(DOCS), sorted(found - set(DOCS))


def test_every_block_runs_or_says_why_not() -> None:
    """A block is run, or text, or marked with its reason; the list is printed."""
    for b in ALL:
        assert b.lang, f"{b.id}: a fence without a language (say ```text for a non-code block)"
        assert b.lang in RUNNABLE | {"text"} or b.not_run, (
            f"{b.id}: a {b.lang} block must be marked <!-- not run: reason -->"
        )
    skipped = [(b.id, b.lang, b.not_run) for b in ALL if b.not_run]
    print("\nblocks not run:")
    for where, lang, reason in skipped:
        print(f"  {where} ({lang}): {reason}")
    assert sum(1 for b in ALL if b.lang in RUNNABLE and not b.not_run) >= 7


# --- shell blocks ----------------------------------------------------------------------------------


def commands(code: str) -> list[tuple[str, list[str]]]:
    """(a command, with its continuation lines; the expected-output comments after it)."""
    out: list[tuple[str, list[str]]] = []
    current: list[str] = []
    for line in code.splitlines():
        stripped = line.strip()
        if not current and stripped.startswith("#"):
            opens = EXPECTED.match(stripped) is not None  # an answer; "#  ..." continues it
            if out and (opens or (out[-1][1] and stripped.startswith("#  "))):
                out[-1][1].append(stripped[1:].strip())
            continue
        if not stripped and not current:
            continue
        current.append(line)
        # a trailing comment (two spaces, then #) may hold an apostrophe: not a quote
        text = "\n".join(re.sub(r"\s{2,}#.*$", "", part) for part in current)
        if text.count("'") % 2 == 0 and not line.rstrip().endswith("\\"):
            text = "\n".join(current)
            out.append((text, []))
            current = []
    assert not current, f"an unfinished command: {current}"
    return out


def check_expected(printed: str, expected: list[str], where: str) -> None:
    text = " ".join(expected)
    try:
        want = None if "..." in text else json.loads(text)
    except json.JSONDecodeError:
        want = None
    if want is None:  # elided: each piece between "..." appears as written
        for piece in text.split("..."):
            piece = piece.strip().strip(",").strip()
            if piece not in ("", "}", "{"):
                squeezed = re.sub(r",\s+\"", ',"', piece)
                assert squeezed in printed, f"{where}: {squeezed!r} not in {printed!r}"
        return
    assert json.loads(printed) == want, f"{where}: {printed!r} != {want!r}"


def shell_env() -> dict[str, str]:
    """The environment of a reader whose virtualenv is active (``python`` is this one)."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    return {**os.environ, "PATH": path}


def run_shell(block: Block, server: str, cwd: Path) -> None:
    cmds = commands(block.code.replace(DOC_URL, server))
    script = ["set -euo pipefail", f"export B={server}", STRICT_CURL]
    for i, (cmd, expected) in enumerate(cmds):
        cmd = re.sub(r"^B=.*$", f"B={server}", cmd, flags=re.M)
        script += [f"echo '@@{i}'", f"STRICT={0 if expected else 1}", cmd, "echo"]
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,  # files a block writes (w.bin, ...) land in the test's directory
        env=shell_env(),
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr}"
    outputs = re.split(r"^@@\d+\n", done.stdout, flags=re.M)[1:]
    assert len(outputs) == len(cmds)
    for (cmd, expected), printed in zip(cmds, outputs):
        if expected:
            check_expected(printed.strip(), expected, f"{block.id} `{cmd.splitlines()[0]}`")


def run_python(block: Block, server: str, cwd: Path, extra_path: list[Path]) -> None:
    code = block.code.replace(DOC_URL, server)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(str(p) for p in [*extra_path, ROOT]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )
    assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr}"
    check_printed(block, done.stdout)


def check_printed(block: Block, printed: str) -> None:
    """Each shown output appears in what the block printed, in the order shown."""
    at = 0
    for line in block.code.splitlines():
        m = PRINTED.match(line)
        if m is None:
            continue
        found = printed.find(m["shown"].strip(), at)
        assert found >= 0, (
            f"{block.id}: {m['shown']!r} not printed (after {printed[:at]!r}):\n{printed}"
        )
        at = found + len(m["shown"].strip())


def test_printed_comments_are_found() -> None:
    """The shown outputs the docs check: the rule reads them, and prose is not one."""
    shown = [m["shown"] for b in ALL for line in b.code.splitlines() if (m := PRINTED.match(line))]
    assert "tensor([2., 4.])" in shown and "[6.0, 192.0]" in shown
    assert not any(s.startswith("sends") for s in shown)
    with pytest.raises(AssertionError, match="not printed"):
        check_printed(Block("d", 1, "python", "print(1)  # 2\n", None), "1\n")


def runnable(doc: str) -> list[Block]:
    return [b for b in blocks(doc) if b.lang in RUNNABLE and not b.not_run]


@pytest.mark.parametrize("doc", DOCS)
def test_doc_blocks_run_as_written(doc: str, server: str, tmp_path: Path) -> None:
    """The doc's blocks in order; python blocks run in ``tmp_path``, where a shell block
    that generates a package (``openapi-python-client generate``) puts it."""
    (tmp_path / "openapi").symlink_to(ROOT / "openapi")
    ran = 0
    cwd = ROOT if doc in FROM_ROOT else tmp_path
    for block in runnable(doc):
        if block.lang == "python":
            run_python(block, server, cwd, [tmp_path])
        elif "openapi-python-client generate" in block.code:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block.code],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=tmp_path,
                env=shell_env(),
            )
            assert done.returncode == 0, f"{block.id}:\n{done.stdout}\n{done.stderr}"
        else:
            run_shell(block, server, cwd)
        ran += 1
    assert ran >= 1
