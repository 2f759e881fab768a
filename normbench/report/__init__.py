"""The report: reads run records (docs/run-record.md) and writes report.md, report.html, CSVs, figures.

It reads JSON only and imports nothing else from normbench, so it runs anywhere the records can be
copied to, without torch.
"""

from normbench.report.build import NoUsableRecords, OutputNotWritable, ReportError, build_report

__all__ = ["build_report", "NoUsableRecords", "OutputNotWritable", "ReportError"]
