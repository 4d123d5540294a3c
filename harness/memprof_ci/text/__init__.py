"""Text shared by every layer: numbers, sizes and site rows in words (fmt),
and strings from outside made inert for Markdown and the terminal (mdsafe).
Imports nothing of the harness."""
