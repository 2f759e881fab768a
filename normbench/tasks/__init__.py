"""Tasks: a task config and a seed in, arrays out.

Each task is one config dataclass, beside its loader in its module here: the ``task`` config group
(conf/task/NAME.yaml composes onto it), its range checks, its ``load`` and its ``tensor_bytes``
(normbench/tasks/data.py says what a task hands back). ``TASK_CONFIGS`` below is the one list of
them: the schema, the Hydra store, the runner and the report read it. The configs and loaders
import no torch, so the schema and the report stay torch-free; four modules here do, and only a
run imports them: ``normbench.tasks.tensors.load_task`` makes a task's arrays the tensors a run
trains on, ``normbench.tasks.batching`` orders an epoch's batches, ``normbench.tasks.scoring``
computes the loss and metric a task names (the training loop asks it, never branching on the task's
name), and ``normbench.tasks.padding`` reads the padding marks a task writes into a variable-length
batch (the models and BatchNorm take their real steps from it).

To add a task: a module here with its config (a ``TaskConfig`` dataclass) and loader, one line in
``TASK_CONFIGS``, conf/task/NAME.yaml, and its test.
"""

from normbench.tasks.data import Split, TaskConfig, TaskData, TaskDataError
from normbench.tasks.digits import DigitsConfig
from normbench.tasks.fortunes import FortunesLmConfig, FortunesTopicConfig
from normbench.tasks.idx import IdxConfig
from normbench.tasks.imdb import ImdbConfig
from normbench.tasks.synthetic import AddingConfig, CopyConfig, MqarConfig
from normbench.tasks.text import TextConfig

TASK_CONFIGS: dict[str, type[TaskConfig]] = {config.name: config for config in (
    AddingConfig, CopyConfig, DigitsConfig, FortunesLmConfig, FortunesTopicConfig, IdxConfig, ImdbConfig, MqarConfig,
    TextConfig)}

__all__ = [
    "TASK_CONFIGS",
    "AddingConfig",
    "CopyConfig",
    "DigitsConfig",
    "FortunesLmConfig",
    "FortunesTopicConfig",
    "IdxConfig",
    "ImdbConfig",
    "MqarConfig",
    "Split",
    "TaskConfig",
    "TaskData",
    "TaskDataError",
    "TextConfig",
]
