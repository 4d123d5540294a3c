"""render/terminal_table.py: the terminal's tables fit 120 columns, cut
cells keep their full text on the detail lines below their row."""

from memprof_ci.render.terminal_table import CUT, table
from memprof_ci.text.wrap import DETAIL_INDENT, WIDTH


def test_a_long_site_is_cut_and_kept_whole_below_its_row():
    long_site = "Very_long_module_name__Inner.with_a_function_name_" + "x" * 120 + " @ file.ml"
    rows = [["bench", "alloc", long_site, "508.6 MiB", "+30.0% [+27.6%, +32.4%]"],
            ["bench", "alloc", "Main.f @ main.ml", "1.0 KiB", "~"]]
    text = table(["benchmark", "check", "site", "current", "delta [95% CI]"], rows,
                 details=["called from Main.g", ""], flex=(2,))
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert lines[2].startswith("bench      alloc  Very_long_module_name") and CUT in lines[2]
    assert lines[2].rstrip().endswith("+30.0% [+27.6%, +32.4%]")
    below = [line for line in lines[3:] if line.startswith(DETAIL_INDENT)]
    # The wrapped lines give back the whole cell and the row's detail (a
    # line break stands for a space).
    joined = "".join(line[len(DETAIL_INDENT):] for line in below)
    assert joined.replace(" ", "") == (long_site + "; called from Main.g").replace(" ", "")
    assert lines[-1].startswith("bench      alloc  Main.f @ main.ml")


def test_a_table_that_fits_is_not_cut():
    rows = [["bench", "Main.f @ main.ml", "~"]]
    text = table(["benchmark", "site", "delta"], rows, flex=(1,))
    assert text.splitlines()[2] == "bench      Main.f @ main.ml  ~"
    assert CUT not in text
