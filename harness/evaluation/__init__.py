"""Evaluation: `cua eval`, its summary.json and its report.html."""

from harness.evaluation.report import write_report
from harness.evaluation.summary import SUMMARY_KEYS, summarize, write_summary

__all__ = ["SUMMARY_KEYS", "summarize", "write_report", "write_summary"]
