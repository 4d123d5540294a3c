"""Text shared by every layer: numbers, sizes and site rows in words (fmt),
strings from outside made inert for Markdown and the terminal (mdsafe), and
the terminal's width with the indented lines wrapped to it (wrap).
Imports nothing of the harness."""
