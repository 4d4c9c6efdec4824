"""Resolution in memory: resolve, resolve_batch, normalise, the forget sweep and explain,
over either backend's kernels."""
