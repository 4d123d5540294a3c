"""Deciding: the statistical tests (stats), the rows compared per site
(comparison), renames and moved allocation (attribution), the decision
pass over a report (verdict), the overhead check's verdict
(overhead_verdict), which nodes of the icicle changed (stack_changes),
power planning (power), the report document decided
into (report_doc) and its typed form (report_types).  Renders nothing: imports nothing from
render/."""
