"""The file-to-file jobs: resolve, normalise and sweep over Parquet, streamed in bounded memory."""

from memresolve._dataset._resolve_job import DatasetSummary

__all__ = ["DatasetSummary"]
