"""JobStore: the only place with SQL. Every state change is one transaction and a compare-and-set.

One facade over parts by concern, each an object that keeps its own state and is given what it
reads of the others (base.Shared: the engine, the configuration, the accounting tables, the nodes
to notify, the parsed requests):

    intake.py      Intake: submission: jobs, arrays, batches, idempotency keys
    scheduling.py  Scheduling: the pass's snapshot and `apply` of its plan; usage and fair share
    actions.py     Actions: cancel, hold, release, requeue, update
    nodesync.py    NodeSync: the agents' sync: registration, reports, orders, prologs/epilogs, lost nodes
    queries.py     Queries: reads for the API (squeue, sacct, sinfo, air list)
    blobs.py       CodeAndSecrets: air runs' code and secrets

The facade's methods are the parts' own (bound in `__init__`), under the names the routes and loops call.
"""

from __future__ import annotations

from sqlalchemy import Engine

from slurmlet.controller.config import ClusterConfig
from slurmlet.controller.core.model import SchedConfig
from slurmlet.controller.core.priority import Weights

from .accounts import AccountStore
from .actions import Actions
from .base import ACTIVE_STATES, FINAL_STATES, Shared, compress, request_of
from .blobs import CodeAndSecrets
from .intake import Intake
from .nodesync import NodeSync
from .queries import Queries
from .scheduling import Applied, Scheduling

__all__ = ["JobStore", "Applied", "ACTIVE_STATES", "FINAL_STATES", "compress", "request_of"]


class JobStore:
    """All reads and writes of jobs and nodes."""

    def __init__(self, engine: Engine, config: ClusterConfig):
        self.engine = engine
        self.accounts = AccountStore(engine, config.cluster_name)
        self.shared = Shared(engine, config, self.accounts)
        self.queries = queries = Queries(self.shared)
        self.intake = intake = Intake(self.shared)
        self.nodes = nodes = NodeSync(self.shared, queries)
        self.scheduling = sched = Scheduling(self.shared, nodes)
        self.actions = actions = Actions(self.shared, queries)
        self.blobs = blobs = CodeAndSecrets(self.shared)
        # submission
        self.job_for_key = intake.job_for_key
        self.purge_keys = intake.purge_keys
        self.submit = intake.submit
        self.submit_keyed = intake.submit_keyed
        self.submit_many = intake.submit_many
        # the scheduling pass, usage and fair share
        self.snapshot = sched.snapshot
        self.apply = sched.apply
        self.admin_level = sched.admin_level
        self.assoc_usage = sched.assoc_usage
        self.tres_run_mins = sched.tres_run_mins
        self.share_tree = sched.share_tree
        self.responding = sched.responding
        self.node_names = sched.node_names
        # what users and operators do to jobs
        self.cancel = actions.cancel
        self.complete = actions.complete
        self.hold = actions.hold
        self.suspend = actions.suspend
        self.release = actions.release
        self.release_all_held = actions.release_all_held
        self.requeue = actions.requeue
        self.earlier_runs = actions.earlier_runs
        self.update_job = actions.update_job
        # the agents' side
        self.node_sync = nodes.node_sync
        self.claim_controller_scripts = nodes.claim_controller_scripts
        self.forget_unconfigured_nodes = nodes.forget_unconfigured_nodes
        self.reset_controller_scripts = nodes.reset_controller_scripts
        self.controller_script_done = nodes.controller_script_done
        self.take_notify = nodes.take_notify
        self.reap = nodes.reap
        self.set_node_state = nodes.set_node_state
        # reads
        self.job_rows = queries.job_rows
        self.create_step = queries.create_step
        self.cancel_step = queries.cancel_step
        self.step_rows = queries.step_rows
        self.get_row = queries.get_row
        self.public_list = queries.public_list
        self.listed = queries.listed
        self.public = queries.public
        self.node_rows = queries.node_rows
        self.usage_records = queries.usage_records
        self.capacity_rows = queries.capacity_rows
        self.active_allocs = queries.active_allocs
        self.run_rows = queries.run_rows
        self.array_members = queries.array_members
        self.array_task = queries.array_task
        self.state_counts = queries.state_counts
        self.state_partition_counts = queries.state_partition_counts
        self.max_job_id = queries.max_job_id
        # air runs' code and secrets
        self.put_code = blobs.put_code
        self.get_code = blobs.get_code
        self.has_code = blobs.has_code
        self.put_secret = blobs.put_secret
        self.delete_secret = blobs.delete_secret
        self.secret_names = blobs.secret_names
        self.missing_secrets = blobs.missing_secrets

    @property
    def config(self) -> ClusterConfig:
        return self.shared.config

    @property
    def weights(self) -> Weights:
        return self.shared.weights

    @property
    def sched(self) -> SchedConfig:
        return self.shared.sched

    def set_config(self, config: ClusterConfig) -> None:
        """scontrol reconfigure: the new configuration, for the next request and pass on."""
        self.shared.set_config(config)
        self.scheduling.forget_usage()
