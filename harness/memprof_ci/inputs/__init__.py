"""Reading what enters the harness: profiles (with their allocation points and
snapshots), memtrace CTF traces, the manifest, and the checks every reader
shares (validate); atomic writes and the baselines lock (atomicio).
Imports nothing above it (sites, decide, measure, store, render, session,
commits, commands)."""
