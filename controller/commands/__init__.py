"""`slurmlet` subcommands that run controller code on the local machine (reached through cli/main.py):
`up`/`down`/`status` (a local cluster), `simulate` (traces through the scheduling core), `db` (schema
migrations), and `translate`'s workload validation."""
