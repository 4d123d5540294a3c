"""Rendering a decided report, never deciding: the terminal and Markdown
(report; the terminal's tables cut to 120 columns by terminal_table), report.html (report_html, report_assets, stackgraph), retaining
paths in words (report_retention), the files a command writes (outputs),
one run's page (view, view_html) and main's history page (history_html).
Imports nothing from measure/."""
