# The two commands of the README. Each does its own set-up, so both work on a
# fresh machine with only the Rust toolchain and Python 3.11 installed.
#   make demo   build, then resolve the bundled example story (per turn, then as a batch job)
#   make test   build, then every check CI runs (.ci/run calls exactly this)

VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# The Spark tests' executors: memresolve from its abi3 wheel, as users ship it to a cluster.
SPARK_VENV ?= .venv-spark
SPARK_WHEELS := target/wheels-abi3


.PHONY: demo test setup spark-executors format bench-dataset bench-spark lint lint-python lint-rust test-rust test-python bench bench-batch bench-normalize bench-erasure store-stress fuzz fuzz-setup

setup:
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[test,lint]"

STORY := python/memresolve/_data/story

# The story turn by turn, then the batch job on the same story as Parquet files.
demo: setup
	$(BIN)/memresolve demo
	$(BIN)/memresolve demo --store target/story.db
	$(BIN)/memresolve batch $(STORY)/records.parquet $(STORY)/contexts.parquet \
		--tombstones $(STORY)/tombstones.parquet --include-excluded --with-values \
		--out target/story-decisions --overwrite

# Rewrites the sources in the style the linters check (make test checks, never rewrites).
format:
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	cargo fmt

# The linters of make test alone (the pre-commit hook runs this).
lint: lint-python lint-rust

lint-python:
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy --strict python tests benches
	$(PY) -m mypy.stubtest memresolve._native

lint-rust:
	cargo fmt --check
	cargo clippy --all-targets --all-features -- -D warnings

test-rust:
	# --all-targets also runs each criterion bench once, untimed, so they cannot rot.
	cargo test --all-targets

# Builds the abi3 wheel (docs/spark.md) and installs it, with the spark extra,
# into the environment the Spark tests start their executors in.
spark-executors: setup
	rm -rf $(SPARK_WHEELS)
	$(BIN)/maturin build --release --features abi3 --out $(SPARK_WHEELS)
	python3 -m venv $(SPARK_VENV)
	$(SPARK_VENV)/bin/pip install --quiet --disable-pip-version-check -c constraints.txt \
		"$$(ls $(SPARK_WHEELS)/memresolve-*.whl)[spark]"
	$(SPARK_VENV)/bin/pip install --quiet --disable-pip-version-check --force-reinstall \
		--no-deps $(SPARK_WHEELS)/memresolve-*.whl

# On every core (pytest-xdist, at most four workers): a module whose fixture is costly (a
# generated store, a local Spark) is an xdist_group, run whole by one worker. The compiled
# core is required: without it the native-only modules would skip (tests/conftest.py).
test-python: spark-executors
	MEMRESOLVE_HYPOTHESIS_PROFILE=ci MEMRESOLVE_REQUIRE_NATIVE=1 \
		MEMRESOLVE_SPARK_PYTHON=$(abspath $(SPARK_VENV))/bin/python \
		$(PY) -m pytest -n auto --maxprocesses 4 --dist loadgroup --durations=25
	# Forced to the reference, as a user without the extension would run (test_backend
	# also runs the package with the compiled module made unimportable). Records are
	# then stored in pure Python; test_parity feeds them to the native kernel too.
	MEMRESOLVE_BACKEND=reference $(PY) -m pytest -q -p no:cacheprovider \
		tests/engine/test_backend.py tests/engine/test_tutorial.py tests/engine/test_spec_fixes.py \
		tests/engine/test_parity.py tests/engine/test_parity_records.py tests/store/test_store.py \
		tests/store/test_store_guarantees.py
	# Benchmarks run once each, untimed, so they cannot rot.
	$(PY) -m pytest -q -p no:cacheprovider benches --benchmark-disable

test: setup lint-python lint-rust test-rust test-python
	$(MAKE) fuzz FUZZ_SECONDS=20 FUZZ_PROFILE=dev

# Coverage-guided fuzzing on stable Rust (fuzz/targets.py): atheris drives each target, and
# the native extension is built with LLVM's sanitizer-coverage pass so its branches guide the
# fuzzer too (the flags apply to the target only, not to build scripts, hence --target).
# make fuzz FUZZ_SECONDS=600 for a real run; findings land in target/fuzz-findings/.
FUZZ_VENV ?= .venv-fuzz
FUZZ_SECONDS ?= 60
FUZZ_PROFILE ?= release
FUZZ_TARGETS := arrow jsonl pipeline record
SANCOV := -C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3 \
	-C llvm-args=-sanitizer-coverage-inline-8bit-counters \
	-C llvm-args=-sanitizer-coverage-pc-table -C llvm-args=-sanitizer-coverage-trace-compares

fuzz-setup: setup
	python3 -m venv $(FUZZ_VENV)
	$(FUZZ_VENV)/bin/pip install --quiet --disable-pip-version-check -c constraints.txt \
		atheris pyarrow numpy
	rm -rf target/fuzz-wheels
	CARGO_TARGET_DIR=target/fuzz RUSTFLAGS="$(SANCOV)" CARGO_PROFILE_RELEASE_LTO=false \
		CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 $(BIN)/maturin build --profile $(FUZZ_PROFILE) \
		--target "$$(rustc -vV | sed -n 's/^host: //p')" -i $(FUZZ_VENV)/bin/python \
		--out target/fuzz-wheels
	$(FUZZ_VENV)/bin/pip install --quiet --disable-pip-version-check --force-reinstall \
		--no-deps target/fuzz-wheels/memresolve-*.whl

fuzz: fuzz-setup
	mkdir -p target/fuzz-findings
	for name in $(FUZZ_TARGETS); do \
		rm -rf target/fuzz-corpus/$$name && mkdir -p target/fuzz-corpus/$$name && \
		cp fuzz/corpus/$$name/* target/fuzz-corpus/$$name/ && \
		LD_PRELOAD="$$($(FUZZ_VENV)/bin/python -c 'import atheris; print(atheris.path())')/ubsan_with_fuzzer.so" \
		$(FUZZ_VENV)/bin/python fuzz/run.py $$name target/fuzz-corpus/$$name \
			-max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=60 -rss_limit_mb=4096 \
			-artifact_prefix=target/fuzz-findings/$$name- -print_final_stats=1 || exit 1; \
	done

bench: setup
	$(PY) -m pytest benches --benchmark-only
	cargo bench --bench core

# resolve_batch against Polars and DuckDB (minutes; add ARGS="--sizes 10000000" for 10M).
bench-batch: setup
	$(PY) benches/bench_batch.py $(ARGS)

bench-normalize: setup
	$(PY) benches/bench_normalize.py $(ARGS)

# The batch job file to file against DuckDB and Polars, and on Spark against plain Spark SQL,
# on a generated store: make bench-dataset STORE=/var/tmp/store-10m (see docs/performance.md).
STORE ?= target/bench-store
bench-dataset: setup
	test -d $(STORE) || $(PY) -m memresolve.testing.batch_store $(STORE) --records 1e6
	$(PY) benches/bench_dataset.py $(STORE) --memory-limit 4GB $(ARGS)

# What an erasure costs by store size: make bench-erasure ARGS="--records 1000000".
bench-erasure: setup
	$(PY) benches/bench_erasure.py $(ARGS)

# The store's residue, crash and race tests at length (tens of minutes; CI runs them short):
# 100 workloads of 2,000 records, 200 kills at random points, 10^6 turns against a writer.
store-stress: setup
	MEMRESOLVE_RESIDUE_SEEDS=100 MEMRESOLVE_CRASH_SEEDS=200 $(PY) -m pytest -q \
		-p no:cacheprovider -n auto --maxprocesses 4 tests/store/test_store_residue.py
	$(PY) -m memresolve.testing.store_race --turns 1000000

bench-spark: setup
	test -d $(STORE) || $(PY) -m memresolve.testing.batch_store $(STORE) --records 1e6
	$(PY) benches/bench_spark.py $(STORE) $(ARGS)
