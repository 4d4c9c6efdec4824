"""What memresolve.spark runs on Spark executors, and how it plans the exchanges."""
