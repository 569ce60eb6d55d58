"""The shell examples of the documentation (docs/*.md), run, and their output compared with the page.

Which blocks run: every fenced block tagged `console`. Its `$ ` lines are commands (a line ending in
`\\` goes on on the next line); the lines under a command, up to the next `$ ` line, are the output the
page shows for it (stdout and stderr together). An HTML comment on the line before a block, which the
site does not show, says what else to do with it:

- `<!-- docs-test: skip REASON -->`: not run (Docker, a GPU, PostgreSQL, a root-only setup, a slow
  install...); a console block with commands must run or say why not;
- `<!-- docs-test: file NAME -->` (before a block of any tag): the block's text is written to NAME in
  the page's directory before the page's commands run, so a page's example files are the ones it shows.

A page's blocks run in order in one bash, in a directory of its own that holds a copy of the checkout's
`examples/` and `tests/data/migration-guide/`, with `HOME` a fresh directory (so `slurmlet up`'s state
lands in `~/.slurmlet/local` there) and the venv's commands first on `PATH`; `slurmlet up` gets
`--port 0` (a shell function adds it), and every cluster a page leaves running (`~/.slurmlet/clusters`)
is stopped with `slurmlet down`.

Placeholders, for what changes from run to run:

- `...` in a line matches any text within that line (ports, paths, tokens, figures that move);
- a line that is `...` alone matches any number of lines, none included;
- dates and times (`2026-12-02T16:09:52`, `2026-12-02 17:19:45`, `Wed Dec 02 16:09:57 2026`) and
  elapsed times (`0:03`, `0:00:08`) match any other of their form;
- trailing blanks are ignored.

The pages show a root's session (user `root`, each node's own host name), so the test runs as root.

A command whose output does not match yet and that only reads (`squeue`, `sinfo`, `sacct`, `cat`,
`grep`, `scontrol show`, ...) is run again until it matches or a minute passes: the page may show a
state the cluster reaches a moment later (a job's end, a backfill pass).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import BIN

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARK = "__docs_example_done__"
READ_ONLY = {"squeue", "sinfo", "sacct", "sprio", "sshare", "sdiag", "sstat", "cat", "grep", "sort", "ls"}
#: what a page's examples make outside its directory (the spec's `home_directory_storage`), removed
#: after the page where it was not there before
OUTSIDE = {"spec-clusters.md": Path("/shared")}
COMMAND_TIMEOUT = 240.0
POLL_DEADLINE = 60.0

_TIMES = [
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d",
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d\d \d\d:\d\d:\d\d \d{4}"
    r"(?: \(\d+\))?",
    r"\b(?:\d+-)?\d+(?::\d\d){1,2}\b",
]
_TIME_RE = re.compile("|".join(f"(?:{t})" for t in _TIMES))


@dataclass
class Command:
    line: int
    text: str
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    line: int
    lang: str
    body: list[str]
    skip: str | None = None
    file: str | None = None
    commands: list[Command] = field(default_factory=list)


def parse(page: Path) -> list[Block]:
    lines = page.read_text().split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)", lines[i])
        if not m:
            i += 1
            continue
        start = i
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        b = Block(start + 1, m.group(1), lines[start + 1:end])
        before = lines[start - 1] if start else ""
        d = re.match(r"^<!-- docs-test: (skip|file) (.+?) -->$", before)
        if d:
            setattr(b, d.group(1), d.group(2))
        if b.lang == "console":
            for n, text in enumerate(b.body):
                if text.startswith("$ "):
                    b.commands.append(Command(start + 2 + n, text[2:]))
                elif b.commands and b.commands[-1].text.endswith("\\"):
                    b.commands[-1].text += "\n" + text
                elif b.commands:
                    b.commands[-1].shown.append(text)
        blocks.append(b)
        i = end + 1
    return blocks


def pattern(shown: list[str]) -> re.Pattern[str]:
    parts = []
    for line in shown:
        line = line.rstrip()
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(_TIME_RE.sub("<t>", line)).replace(r"\.\.\.", r"[^\n]*") + r"\n")
    return re.compile("".join(parts))


def matches(shown: list[str], got: str) -> bool:
    text = "".join(_TIME_RE.sub("<t>", ln.rstrip()) + "\n" for ln in got.splitlines())
    return pattern(shown).fullmatch(text) is not None


def reads_only(cmd: str) -> bool:
    words = cmd.split()
    if not words:
        return False
    if words[0] == "scontrol":
        return len(words) > 1 and words[1] == "show"
    if words[0] == "air":
        return len(words) > 1 and words[1] in ("list", "get", "logs")
    return words[0] in READ_ONLY


class Shell:
    """One bash for a page: commands written to its stdin, their output read up to a marker."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(["bash", "--norc", "--noprofile"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.buf = b""
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.run("slurmlet() { if [ \"$1\" = up ]; then shift; command slurmlet up --port 0 \"$@\"; "
                 "else command slurmlet \"$@\"; fi; }")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 65536):
            with self.cond:
                self.buf += chunk
                self.cond.notify_all()

    def run(self, cmd: str, timeout: float = COMMAND_TIMEOUT) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{{ {cmd}\n}} </dev/null 2>&1; printf '%s\\n' {MARK}\n".encode())
        self.proc.stdin.flush()
        end = f"{MARK}\n".encode()
        with self.cond:
            if not self.cond.wait_for(lambda: end in self.buf, timeout):
                raise AssertionError(f"no end of {cmd!r} within {timeout} s; so far:\n{self.buf.decode()}")
            out, self.buf = self.buf.split(end, 1)
        return out.decode(errors="replace")

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def pages() -> list[Path]:
    return sorted(p for p in DOCS.glob("*.md") if any(b.commands and not b.skip for b in parse(p)))


def test_the_markers_are_well_placed() -> None:
    """A skip names its reason and stands before a console block; every page's example file is written
    by one block only; the pages hold examples that run."""
    for page in sorted(DOCS.glob("*.md")):
        files = [b.file for b in parse(page) if b.file]
        assert len(files) == len(set(files)), f"{page.name}: an example file written twice: {files}"
        for b in parse(page):
            if b.skip is not None:
                assert b.lang == "console" and b.skip.strip(), f"{page.name}:{b.line}: skip needs a console block"
    assert len(pages()) >= 10


def test_placeholders() -> None:
    assert matches(["Submitted batch job 1"], "Submitted batch job 1\n")
    assert not matches(["Submitted batch job 1"], "Submitted batch job 2\n")
    assert matches(["# dashboard at http://127.0.0.1:.../?token=..."], "# dashboard at http://127.0.0.1:4242/?token=ab\n")
    assert not matches(["a ... b"], "a x\ny b\n")
    assert matches(["first", "...", "last"], "first\nlast\n")
    assert matches(["first", "...", "last"], "first\n1\n2\nlast\n")
    assert matches(["  1  R   0:03 node1", "at 2026-12-02T16:39:49"], "  1  R   0:51 node1\nat 2027-01-03T01:02:03\n")
    assert not matches(["  1  R   0:03 node1"], "  1  PD  0:03 node1\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="the pages show a root's session (USER root, nodes' host names)")
@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_page_examples(page: Path, tmp_path: Path) -> None:
    outside = OUTSIDE.get(page.name)
    made = outside is not None and not outside.exists()
    work, home = tmp_path / "work", tmp_path / "home"
    home.mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    shutil.copytree(ROOT / "tests" / "data" / "migration-guide", work / "tests" / "data" / "migration-guide")
    blocks = parse(page)
    for b in blocks:
        if b.file:
            (work / b.file).parent.mkdir(parents=True, exist_ok=True)
            (work / b.file).write_text("\n".join(b.body) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMLET_")}
    env.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PYTHONDONTWRITEBYTECODE="1")
    shell = Shell(work, env)
    failures = []
    try:
        for b in blocks:
            if b.skip or b.lang != "console":
                continue
            for c in b.commands:
                got = shell.run(c.text)
                deadline = time.monotonic() + POLL_DEADLINE
                while not matches(c.shown, got) and reads_only(c.text) and time.monotonic() < deadline:
                    time.sleep(0.5)  # polling a state the page shows, with a deadline
                    got = shell.run(c.text)
                if not matches(c.shown, got):
                    failures.append(f"{page.name}:{c.line}: $ {c.text}\n--- the page shows:\n"
                                    + "\n".join(c.shown) + f"\n--- it printed:\n{got}")
                    break
            if failures:
                break
    finally:
        shell.close()
        for record in sorted((home / ".slurmlet" / "clusters").glob("*")):  # slurmlet up's, one a cluster
            state = record.read_text().split("\n")[4]
            subprocess.run([str(BIN / "slurmlet"), "down", "--state-dir", state], env=env, capture_output=True,
                           timeout=60)
        if made and outside is not None:
            shutil.rmtree(outside, ignore_errors=True)
    assert not failures, "\n".join(failures)
