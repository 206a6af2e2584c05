"""The stages of a round, one module each, each with its Prefect task and its plain function:
plan, write, collect, curate (read in that order; flows.pipeline declares them, with an eval's
(evaluate) and an import's (importing)). The plain
functions are importable from here for tests and for other commands."""

from flows.stages.collect import collect_shard, shard_keys
from flows.stages.curate import CURATE_KEY, curate_round
from flows.stages.plan import finish_round, open_or_resume_round, selected_families
from flows.stages.write import load_tasks, write_tasks

__all__ = ["CURATE_KEY", "collect_shard", "curate_round", "finish_round", "load_tasks", "open_or_resume_round", "selected_families",
           "shard_keys", "write_tasks"]
