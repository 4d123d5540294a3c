"""benchmarks/RESULTS.md stays a document of the present: one current table
per study, each naming the runtime it was measured on, in under 40 KB, in
the third person. Its header does not type the current runtime's id: the
current id is what runtime-patch/patch-id.sh prints. History goes to
CHANGES.md ("Measurement history")."""

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "RESULTS.md"
LIMIT = 40 * 1024
RUNTIME_ID = re.compile(r"`[0-9a-f]{16}`")


def _text():
    return RESULTS.read_text(encoding="utf-8")


def _sections(text):
    """(heading, body) for every ## and ### section; the header before the
    first ## is not a section."""
    parts = re.split(r"(?m)^(#{2,3} .*)$", text)
    return list(zip(parts[1::2], parts[2::2]))


def _prose(text):
    """The text without code: fenced blocks, indented blocks and inline
    code spans (commands hold `-I stdlib` and the like)."""
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    text = "\n".join(line for line in text.splitlines()
                     if not line.startswith("    "))
    return re.sub(r"`[^`]*`", "", text)


def test_results_is_under_40_kb():
    size = RESULTS.stat().st_size
    assert size < LIMIT, (
        f"benchmarks/RESULTS.md is {size} bytes, over {LIMIT}: move "
        "superseded tables and history to CHANGES.md")


def test_every_section_names_a_runtime_id():
    sections = _sections(_text())
    assert sections
    # A section whose figures are all in its subsections has no body.
    missing = [heading for heading, body in sections
               if body.strip() and not RUNTIME_ID.search(body)]
    assert not missing, f"sections naming no runtime id: {missing}"


def test_no_first_person_prose():
    # "-I dir" is a compiler flag, not a person.
    hits = re.findall(r"[^\n]{0,30}(?<![-\w])I(?:'m|'ve|'d)?\b[^\n]{0,30}",
                      _prose(_text()))
    assert not hits, f"first-person prose in RESULTS.md: {hits}"


def test_header_computes_the_current_runtime():
    header = _text().split("\n## ", 1)[0]
    assert "runtime-patch/patch-id.sh" in header
    assert not RUNTIME_ID.search(header), (
        "the header types a runtime id; the current one is what "
        "patch-id.sh prints")
