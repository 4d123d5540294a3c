"""Git commits as build trees: a ref built in a temporary worktree
(worktree), `check --against REF` (against) and the search of `bisect`
(bisection)."""
