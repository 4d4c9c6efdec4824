"""Input and output: Arrow tables, Parquet inputs, JSON Lines, in the forms both backends read."""
