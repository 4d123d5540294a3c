"""mdsafe leaves no e-mail autolink, whatever follows the "@".

GFM's autolink extension (cmark-gfm, as GitHub renders comments and job
summaries) accepts after the "@" of an address any of letters, digits,
"_", "." and "-": `me@-evil.example` and `me@.evil.example` become
mailto links as surely as `me@evil.example`, for example in a forged
`ocaml_version` or a benchmark's error text. Each renderer of mdsafe is
checked on the real cmark-gfm (test_hostile_text.cmark).
"""
import pytest

from harness_testlib import REPO  # noqa: F401  (puts harness/ on sys.path)
from memprof_ci.text import mdsafe
from test_hostile_text import cmark

ADDRESSES = ["me@evil.example", "me@-evil.example", "me@.evil.example", "me@_evil.example",
             "a.b-c_d@x-y.evil.example", "x@-.y"]


@pytest.mark.parametrize("address", ADDRESSES)
@pytest.mark.parametrize("render", [
    lambda s: mdsafe.text(s),
    lambda s: "| " + mdsafe.code(s) + " |\n|---|\n| " + mdsafe.text(s) + " |",
    lambda s: "\n".join(mdsafe.code_block([s])),
    lambda s: "<details><summary>" + mdsafe.text(s) + "</summary>\n\n" + mdsafe.text(s) + "\n</details>",
], ids=["text", "table", "code-block", "details"])
def test_no_mailto_link(address, render):
    html = cmark("ocaml " + render("version " + address + " here") + "\n")
    assert "<a " not in html and "mailto:" not in html, html


def test_the_defused_address_still_reads_the_same():
    shown = mdsafe.text("me@-evil.example")
    assert shown.replace(mdsafe.ZWJ, "") == "me@-evil.example"
