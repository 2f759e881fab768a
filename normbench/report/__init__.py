"""The report: reads run records (docs/run-record.md) and writes report.md, report.html, CSVs, figures.

It reads the records' JSON, never the runner's objects, and renders what the analysis decided: from
the statistics it imports only their result (normbench.analysis.result: StudyResult, built once from the
records, and its types) and computes none itself; from the rest of normbench it imports the records (normbench.records: the record, its reader and the
metric table, a sequential study's plan file) and the task, family and record descriptions
(normbench.configuration.schema, families and contract), none of which imports torch, so it runs anywhere the records can be copied to, without torch. The
names below load on first use: importing the package loads no matplotlib. What reads a rendered page
back (screenshots, the page's promises) is normbench.page_check; the report's own speed benchmark is
normbench.bench.report_scale.
"""

import importlib

__all__ = ["build_report", "NoUsableRecords", "OutputNotWritable", "ReportError"]


def __getattr__(name):
    if name in __all__:
        return getattr(importlib.import_module("normbench.report.build"), name)
    raise AttributeError(f"module 'normbench.report' has no attribute {name!r}")
