"""The benchmark page (``docs/benchmarks.md``), rewritten by ``python -m bench --write``.

Each benchmark has a section of its own between markers; a run rewrites the sections of the
benchmarks it ran and keeps the others as they were, then the table at the top is made anew
from every section. History is in git, not on the page.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

HEAD = """# Benchmarks

Every performance target of the project, and the latest figures. Each benchmark is a script in
`bench/` that measures side by side in one run (this machine is shared and noisy, so ratios, not
absolute times, are what a target is set on) and prints its own summary;
`python -m bench --write docs/benchmarks.md` runs them all and rewrites this page
(`--only NAME,...` some of them; `--quick` the smoke versions, which the tests run).
The figures below were measured on a 2-core machine; the host line says how busy it was.

"""

SECTION = re.compile(r"<!-- bench:(?P<name>[^>]+?) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->\n", re.S)
ROW = re.compile(r"<!-- row: (?P<row>.*?) -->")


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def section(name: str, script: str, against: str, target: str, ratio: str, figure: str, output: str, host: str,
            *, quick: bool) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    row = " | ".join(_cell(c) for c in (name, target, against, ratio, figure[:160], when + (" (quick)" if quick else "")))
    return (f"<!-- bench:{name} -->\n<!-- row: {row} -->\n## {name}\n\n"
            f"`python bench/{script}`: target {target}, compared against {against}. "
            f"Measured {when}{' (smoke run)' if quick else ''}; {host}.\n\n"
            f"```\n{output.rstrip()}\n```\n\n<!-- /bench:{name} -->\n")


def rewrite(page: Path, results: list[tuple[str, str, str, str, str, str, str]], order: list[str], host: str,
            *, quick: bool = False) -> None:
    """Rewrite ``page`` with the sections of ``results`` (name, script, against, target, ratio, figure,
    output), keeping the sections of benchmarks not run, in ``order``."""
    old = page.read_text(encoding="utf-8") if page.exists() else ""
    sections = {m["name"]: m.group(0) for m in SECTION.finditer(old)}
    for name, script, against, target, ratio, figure, output in results:
        sections[name] = section(name, script, against, target, ratio, figure, output, host, quick=quick)
    names = [n for n in order if n in sections] + sorted(set(sections) - set(order))
    table = ["| benchmark | target | compared against | ratio | figure | measured |", "|---|---|---|---|---|---|"]
    for name in names:
        m = ROW.search(sections[name])
        if m:
            table.append(f"| {m['row']} |")
    text = HEAD + "\n".join(table) + "\n\n" + "\n".join(sections[n] for n in names)
    tmp = page.with_name(page.name + ".tmp")
    page.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(page)
