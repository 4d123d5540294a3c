#!/usr/bin/env python3
"""md_report.py: the Markdown that judge.sh itself writes into report.md.

    md_report.py error MESSAGE [NOTE...]   the report of a run that could not
                                            be judged: a heading, MESSAGE and
                                            each NOTE as a paragraph
    md_report.py para TEXT...               each TEXT as a paragraph (appended
                                            to a report the harness wrote)

Run with PYTHONPATH naming the trusted harness: every string goes through
memprof_ci.text.mdsafe.text(), the function the harness renders its own notes
and names with, so judge.sh has no Markdown path of its own (the job
summary and the pull-request comment then pass the whole report through
md_inert.inert()).

Invariants: whatever the arguments (pull-request file and benchmark names,
git's and the harness's stderr), the output is plain text in Markdown: no
link, autolink, mention, image, HTML or block structure starts inside an
argument; each paragraph is at most mdsafe.MESSAGE_LIMIT characters of it.
Exit 0, or 2 with one line on a bad command.
"""
import sys

from memprof_ci.text.mdsafe import MESSAGE_LIMIT, text

HEADING = "## memprof-ci could not judge this run"


def para(s):
    return text(s, limit=MESSAGE_LIMIT)


def main(argv):
    if len(argv) >= 2 and argv[0] == "error":
        out = [HEADING, para(argv[1])] + [para(n) for n in argv[2:]]
    elif argv and argv[0] == "para":
        out = [""] + [para(n) for n in argv[1:]]
    else:
        print("usage: md_report.py error MESSAGE [NOTE...] | para TEXT...", file=sys.stderr)
        return 2
    sys.stdout.write("\n\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
