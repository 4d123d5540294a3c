"""A check, update-baselines or profile session under pytest: its setup and
pytest run (pytest_run), its state (context), its items (plugin) and each
step's time (steps)."""
