"""verdict.classify on rows counted exactly: the size of the change decides,
relative (min_effect, min_share) and absolute (EXACT_MIN_BYTES a run)."""

from memprof_ci.decide import stats, verdict

PARAMS = {"alpha": 0.01, "min_effect": 0.01, "min_share": 0.005, "exact": True}


def exact_rows(base: dict, cur: dict) -> dict:
    """Rows of one run at rate 1 each side (a count is words)."""
    rows = stats.site_rows("b", "live", {k: (v, None) for k, v in cur.items()},
                           {k: (v, None) for k, v in base.items()},
                           sum(cur.values()), sum(base.values()), 1.0, 1.0, PARAMS)
    verdict.classify(rows)
    return {r["site"]: r for r in rows}


def test_exact_change_below_a_kibibyte_never_fails():
    # Sys.executable_name of a checkout with a 40-character longer path:
    # 7 -> 12 words, +71% of a site that holds most of what is live at exit.
    rows = exact_rows({"Stdlib.Sys": 7, "Main.keep": 3}, {"Stdlib.Sys": 12, "Main.keep": 3})
    r = rows["Stdlib.Sys"]
    assert r["share"] > 0.5 and r["ratio"] > 1.5
    assert r["status"] == "~" and r["note"] == f"below {verdict.EXACT_MIN_BYTES} bytes"
    # The same change seen two-sided (a proposed baseline) is no mismatch.
    two = stats.site_rows("b", "live", {"s": (12, None)}, {"s": (7, None)}, 12, 7, 1.0, 1.0,
                          PARAMS)
    verdict.classify(two, two_sided=True)
    assert two[0]["status"] == "~"


def test_exact_change_of_a_kibibyte_or_more_is_judged_on_its_size():
    words = verdict.EXACT_MIN_BYTES // 8
    rows = exact_rows({"Main.grow": 10 * words, "Main.shrink": 10 * words, "Main.tiny": 1000},
                      {"Main.grow": 11 * words, "Main.shrink": 9 * words, "Main.tiny": 1001})
    assert rows["Main.grow"]["status"] == "regression"        # +10%, +1 KiB
    assert rows["Main.shrink"]["status"] == "improvement"
    assert rows["Main.tiny"]["status"] == "~"                   # +0.1%: below min_effect
    assert rows["Main.tiny"]["note"] == "increase below min_effect"
    # One word under the floor, with the same relative change, passes.
    under = exact_rows({"Main.grow": 10 * words - 10}, {"Main.grow": 11 * words - 11})
    assert under["Main.grow"]["status"] == "~"
