"""The README teaches (issue 29, item 6): the two commands first, then in
under 200 lines what the kit is for, a first prompt run, explored, broken,
replayed and fixed, and one section per use, each linking to its page in
`docs/`; the kit's internals (the Lua budget's charges, runtime reuse and
lupa's hazards, benchmark figures) live on those pages; `docs/index.md`
orders every page for a reader (kit: readme)."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")

#: The sections the issue asks for, as the README titles them, in order.
SECTIONS = ("What the kit is for", "Your first prompt", "Running prompts",
            "Reproducing a failure from a seed", "Fuzzing races in CI", "Porting an engine")
#: The sections for one use each, which must link their doc page.
USES = SECTIONS[2:]


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.*)$", text, flags=re.M)
    return {title: body for title, body in zip(parts[1::2], parts[2::2])}


def test_the_readme_is_under_200_lines_and_starts_with_the_two_commands():
    assert len(README.splitlines()) < 200
    first = re.search(r"```sh\n(.*?)```", README, re.S).group(1).splitlines()
    assert first == ["pip install . && forge conformance",
                     "pip install -e '.[test,distributed]' && python3 -m pytest"]


def test_it_has_the_sections_in_order_and_each_use_links_its_page():
    titles = list(_sections(README))
    found = [next(t for t in titles if t.startswith(s)) for s in SECTIONS]
    assert [titles.index(t) for t in found] == sorted(titles.index(t) for t in found)
    for title in found:
        if title.startswith(USES):
            pages = [p for p in LINK.findall(_sections(README)[title]) if p.startswith("docs/")]
            assert pages, f"section {title!r} links no docs/ page"
            for page in pages:
                assert (ROOT / page).exists(), page


def test_internals_live_in_the_docs_not_the_readme():
    for word in ("lupa", "segfault", "instructions per", "ops/s", "runs/s"):
        assert word not in README, word


def test_docs_index_orders_every_page_and_every_link_resolves():
    index = ROOT / "docs" / "index.md"
    assert "docs/index.md" in LINK.findall(README)
    linked = {(index.parent / p).resolve() for p in LINK.findall(index.read_text("utf-8"))}
    pages = {p.resolve() for p in (ROOT / "docs").rglob("*.md")} - {index.resolve()}
    assert not pages - linked, sorted(str(p.relative_to(ROOT)) for p in pages - linked)
    assert all(p.exists() for p in linked)
    assert (ROOT / "CHANGELOG.md").resolve() in linked
