"""Allocation sites: a site's key (keys), profile stacks grouped into sites
and summed over runs as an Aggregate (grouping), and the exactly counted
allocation points grouped the same way (point_sites), and the one type of
a retaining path and its hops (retaining)."""
