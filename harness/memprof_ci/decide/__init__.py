"""Deciding: the statistical tests (stats), the rows compared per site
(comparison), renames and moved allocation (attribution), the decision
pass over a report (verdict), power planning (power) and the report
document decided into (report_doc).  Renders nothing: imports nothing from
render/."""
