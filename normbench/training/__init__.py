"""One run: `run` (config → task → model → training → record), the training loop `train` (the
`Trainer`, which owns its state) with what it computes in (`precision`) and measures (`probes`), the
files a run writes beside its record (`checkpoint`, `saved_model`, `logfile`), the hooks a run calls
(`hooks`) and the loggers that implement them (`loggers`, `mlflow_logger`, `wandb_logger`, named by
`tracking`), what the run ran on (`environment`, `machine`), and the commands that run a recorded run
again (`rerun`, `evaluate`). This package may import the packages below it (`normbench.configuration`,
`normbench.records`, `normbench.models`, `normbench.norms`, `normbench.tasks`) and nothing above, not
even the analysis: a run writes what it measured, and verdicts on it (did it train?) are the analysis's,
decided from the records whenever they are read. The analysis, the report, the benchmarks and the
studies import it or stand beside it, never the reverse; the loop stands on `hooks` alone, not on the
loggers' libraries."""
