"""The runtime: the process pool and Dask backend, signals, progress, result files, deferred imports, and what a
config's entry may read."""
