"""CI: what a fork's CI engine runs and talks to — the pull-request gate (`verify`), the GitHub API
(issues, the refresh pull request) and the workflow file `patchkit ci github` writes."""
