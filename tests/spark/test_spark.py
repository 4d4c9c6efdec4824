"""``memresolve.spark.resolve`` on a local Spark (``local[2]``, one session for the module):
the rows of ``resolve_batch`` on generated stores, errors, Spark Connect, and executors that
run memresolve as installed from its wheel.

Skips only where Spark cannot run (no pyspark, no JVM), saying why; with
``MEMRESOLVE_REQUIRE_SPARK=1`` (set by ``.ci/run``) that is a failure instead. Executors
run ``MEMRESOLVE_SPARK_PYTHON`` when set (``make test`` builds the abi3 wheel and installs
it there, as docs/spark.md tells users to ship it), else this interpreter.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memresolve as mr
from batch_rows import arrow_tables, by_context
from memresolve.testing import Store, stores
from memresolve.testing.batch_store import generate, write_parquet

REQUIRED = os.environ.get("MEMRESOLVE_REQUIRE_SPARK") == "1"
EXECUTOR_PYTHON = os.environ.get("MEMRESOLVE_SPARK_PYTHON") or sys.executable


def _why_not() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (the test extra installs it)"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and Path(java_home, "bin/java").exists()):
        return "no JVM: Spark needs Java 17 (apt install openjdk-17-jre-headless)"
    return None


_MISSING = _why_not()
if _MISSING is not None:
    if REQUIRED:
        pytest.fail(f"MEMRESOLVE_REQUIRE_SPARK=1 but {_MISSING}", pytrace=False)
    pytest.skip(_MISSING, allow_module_level=True)
if mr.backend_name() != "native":
    pytest.skip("memresolve.spark runs the compiled core", allow_module_level=True)

from memresolve import spark as mrs  # noqa: E402 - only once pyspark is known to be there

# One worker runs the module: one local Spark (a JVM) per run, started by a module fixture.
pytestmark = pytest.mark.xdist_group("spark")


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """One local Spark for the module: 2 cores, 2 shuffle partitions, no UI."""
    from pyspark.sql import SparkSession  # noqa: PLC0415

    os.environ["PYSPARK_PYTHON"] = EXECUTOR_PYTHON
    session = (
        SparkSession.builder.master("local[2]")
        .appName("memresolve-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.range(4).count()  # the first job starts the Python workers: outside any test
    yield session
    session.stop()


def _frames(spark: Any, *tables: pa.Table | None) -> list[Any]:
    return [None if table is None else spark.createDataFrame(table) for table in tables]


def _expected(
    records: pa.Table, contexts: pa.Table, tombstones: pa.Table | None, **options: bool
) -> Any:
    return by_context(mr.resolve_batch(records, contexts, tombstones=tombstones, **options))


def test_executors_run_the_installed_wheel(spark: Any) -> None:
    def where(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import memresolve  # noqa: PLC0415 - on the executor

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist(
            [{"file": memresolve.__file__, "backend": memresolve.backend_name()}]
        )

    (row,) = spark.range(1).coalesce(1).mapInArrow(where, "file string, backend string").collect()
    assert row.backend == "native"
    if REQUIRED or "MEMRESOLVE_SPARK_PYTHON" in os.environ:
        assert "MEMRESOLVE_SPARK_PYTHON" in os.environ, "CI runs executors on the wheel"
        # Installed from the wheel into the executors' environment, not this checkout's source.
        executors = Path(os.environ["MEMRESOLVE_SPARK_PYTHON"]).parent.parent
        assert Path(row.file).is_relative_to(executors)
        assert "site-packages" in Path(row.file).parts
        assert not Path(row.file).resolve().is_relative_to(Path(mr.__file__).resolve().parent)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stores(max_records=40, max_contexts=8, max_users=4), st.booleans(), st.booleans())
def test_generated_stores_give_the_rows_of_resolve_batch(
    spark: Any, store: Store, include_excluded: bool, with_values: bool
) -> None:
    records, contexts, tombstones = arrow_tables(store)
    frames = _frames(spark, records, contexts, tombstones)
    got = mrs.resolve(*frames, include_excluded=include_excluded, with_values=with_values).toArrow()
    assert by_context(got) == _expected(
        records, contexts, tombstones, include_excluded=include_excluded, with_values=with_values
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_stores_with_owned_and_unowned_conversations(spark: Any, seed: int) -> None:
    store = generate(4_000, seed=seed)
    frames = _frames(spark, store.records, store.contexts, store.tombstones)
    got = mrs.resolve(*frames, include_excluded=True, partitions=5).toArrow()
    assert by_context(got) == _expected(
        store.records, store.contexts, store.tombstones, include_excluded=True
    )


def test_a_100k_store_read_from_parquet(spark: Any, tmp_path: Path) -> None:
    written = write_parquet(tmp_path, 100_000, seed=4, chunk_records=50_000)
    frames = [
        spark.read.parquet(path) for path in (written.records, written.contexts, written.tombstones)
    ]
    got = mrs.resolve(*frames, include_excluded=True, with_values=True).toArrow()
    assert got.schema.names == ["context_id", "record_id", "decision", "key", "value", "certainty"]
    expected = _expected(
        *(pq.read_table(path) for path in (written.records, written.contexts, written.tombstones)),
        include_excluded=True,
        with_values=True,
    )
    assert by_context(got) == expected


def test_a_missing_column_is_an_error_at_once(spark: Any) -> None:
    store = generate(200, seed=1)
    records, contexts = _frames(spark, store.records.drop_columns(["key"]), store.contexts)
    with pytest.raises(mr.InvalidInputError) as caught:
        mrs.resolve(records, contexts)
    assert caught.value.where()[:2] == (mr.ErrorKind.MISSING_COLUMN, "key")


def test_a_bad_row_fails_the_job_naming_record_and_field(spark: Any) -> None:
    store = generate(2_000, seed=1)
    statuses = store.records.column("status").to_pylist()
    statuses[1_234] = "pending"
    bad = store.records.set_column(
        store.records.schema.get_field_index("status"), "status", pa.array(statuses)
    )
    frames = _frames(spark, bad, store.contexts)
    with pytest.raises(Exception, match="InvalidInputError") as caught:
        mrs.resolve(*frames).collect()
    assert "status" in str(caught.value)
    assert store.records.column("id")[1_234].as_py() in str(caught.value)


def test_an_id_repeated_across_owners_is_an_error(spark: Any) -> None:
    from pyspark.sql import functions as F  # noqa: PLC0415

    store = generate(2_000, seed=1)
    ids = store.records.column("id").to_pylist()
    users = store.records.column("user_id").to_pylist()
    # Two owners in different partitions (Spark's hash partitioning: pmod(hash(owner), n)),
    # so only the check across the whole input can see the repeat.
    part = {
        row.user_id: row.part
        for row in spark.createDataFrame([(u,) for u in set(users) if u], "user_id string")
        .select("user_id", F.expr("pmod(hash(user_id), 2)").alias("part"))
        .collect()
    }
    other = next(n for n, user in enumerate(users) if user and part[user] != part[users[0]])
    ids[other] = ids[0]
    repeated = store.records.set_column(0, "id", pa.array(ids))
    with pytest.raises(Exception, match="occurs 2 times") as caught:
        mrs.resolve(*_frames(spark, repeated, store.contexts), partitions=2).collect()
    assert ids[0] in str(caught.value)
    assert "InvalidInputError" in str(caught.value)


@pytest.mark.parametrize(("name", "value"), [("include_excluded", 1), ("partitions", 0)])
def test_bad_options_are_refused(spark: Any, name: str, value: object) -> None:
    store = generate(100, seed=1)
    with pytest.raises(mr.InvalidInputError) as caught:
        mrs.resolve(*_frames(spark, store.records, store.contexts), **{name: value})  # type: ignore[arg-type]
    assert caught.value.field == name


CONNECT_CHECK = textwrap.dedent(
    """
    import sys
    import memresolve as mr
    from memresolve import spark as mrs
    from memresolve.testing.batch_store import generate
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    store = generate(3_000, seed=8)
    frames = [spark.createDataFrame(t) for t in (store.records, store.contexts, store.tombstones)]
    got = mrs.resolve(*frames, include_excluded=True, with_values=True).toArrow()
    expected = mr.resolve_batch(
        store.records, store.contexts, tombstones=store.tombstones,
        include_excluded=True, with_values=True,
    )
    sys.path.insert(0, sys.argv[1])
    from batch_rows import by_context
    assert by_context(got) == by_context(expected), "Spark Connect rows differ"
    print("rows", got.num_rows)
    spark.stop()
    """
)


def test_spark_connect_gives_the_same_rows(tmp_path: Path) -> None:
    # Its own process: a Connect session starts a local server, beside no other Spark.
    done = subprocess.run(
        [sys.executable, "-c", CONNECT_CHECK, str(Path(__file__).parents[1] / "support")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYSPARK_PYTHON": EXECUTOR_PYTHON},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.startswith("rows ")


def test_the_documented_example_runs(spark: Any, tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "spark.md").read_text(encoding="utf-8")
    block = page.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(block, "docs/spark.md", "exec"), namespace)
    written = write_parquet(tmp_path / "store", 5_000, seed=6)
    namespace["resolve_store"](spark, str(tmp_path / "store"), str(tmp_path / "decisions"))
    expected = mr.resolve_batch(
        pq.read_table(written.records),
        pq.read_table(written.contexts),
        tombstones=pq.read_table(written.tombstones),
        include_excluded=True,
    )
    assert by_context(pq.read_table(tmp_path / "decisions")) == by_context(expected)


def test_the_spark_benchmark_runs(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_parquet(tmp_path / "store", 5_000, seed=3)
    sys.path.insert(0, str(Path(__file__).parents[2] / "benches"))
    try:
        import bench_spark  # noqa: PLC0415 - a script of benches/, not a module of the suite
    finally:
        sys.path.pop(0)
    assert bench_spark.main([str(tmp_path / "store"), "--scratch", str(tmp_path)], spark) == 0
    out = capsys.readouterr().out
    assert "| memresolve.spark |" in out
    assert "| plain Spark SQL |" in out
    assert "| memresolve batch (no Spark) |" in out


def test_columns_of_the_users_own_do_not_meet_the_plans(spark: Any) -> None:
    store = generate(2_000, seed=5)
    contexts = store.contexts.append_column("_row", pa.array([7] * store.contexts.num_rows))
    records = store.records.append_column(
        "_conversation", pa.array(["x"] * store.records.num_rows)
    ).append_column("_joined", pa.array(["y"] * store.records.num_rows))
    got = mrs.resolve(*_frames(spark, records, contexts, store.tombstones)).toArrow()
    assert by_context(got) == _expected(store.records, store.contexts, store.tombstones)


# The background jobs (docs/spec.md §7.3) ----------------------------------------------------


def _sorted(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*(column.to_pylist() for column in table.columns), strict=True))


def _as_strings(table: pa.Table) -> pa.Table:
    return pa.table(
        {
            name: table.column(name).cast(pa.string())
            if pa.types.is_dictionary(table.column(name).type)
            else table.column(name)
            for name in table.column_names
        }
    )


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stores(max_records=40, max_users=4), st.integers(-2, 2), st.integers(1, 5))
def test_normalize_and_forget_sweep_give_the_rows_of_their_batch_forms(
    spark: Any, store: Store, shift: int, partitions: int
) -> None:
    from datetime import timedelta  # noqa: PLC0415

    from story import NOW  # noqa: PLC0415

    now = NOW + timedelta(days=shift)
    records, _, tombstones = arrow_tables(store)
    frames = _frames(spark, records, tombstones)
    got = mrs.normalize(frames[0], now=now, tombstones=frames[1], partitions=partitions)
    expected = mr.normalize_batch(records, now=now, tombstones=tombstones)
    assert _sorted(got.toArrow()) == _sorted(_as_strings(expected))
    swept = mrs.forget_sweep(frames[0], frames[1]).toArrow()
    assert _sorted(swept) == _sorted(_as_strings(mr.forget_sweep_batch(records, tombstones)))


def test_normalize_a_generated_store_with_corrections_across_partitions(spark: Any) -> None:
    store = generate(20_000, seed=5)
    now = max(store.contexts.column("now").to_pylist())
    records, tombstones = _frames(spark, store.records, store.tombstones)
    got = mrs.normalize(records, now=now, tombstones=tombstones, partitions=7).toArrow()
    expected = mr.normalize_batch(store.records, now=now, tombstones=store.tombstones)
    assert expected.num_rows > 1_000
    assert got.schema.names == ["record_id", "old_status", "new_status"]
    assert _sorted(got) == _sorted(_as_strings(expected))


def test_the_jobs_refuse_bad_input(spark: Any) -> None:
    store = generate(2_000, seed=1)
    ids = store.records.column("id").to_pylist()
    ids[1_500] = ids[3]
    repeated = store.records.set_column(0, "id", pa.array(ids))
    (frame,) = _frames(spark, repeated)
    # Equal ids meet in one partition of normalize (split by id), where the core names
    # the id; the sweep's check across partitions names it too.
    jobs: list[Any] = [mrs.normalize(frame, now=NOW_UTC, partitions=2), mrs.forget_sweep(frame)]
    for job in jobs:
        with pytest.raises(Exception, match="InvalidInputError") as caught:
            job.collect()
        assert ids[3] in str(caught.value)
    (frame,) = _frames(spark, store.records.drop_columns(["key"]))
    with pytest.raises(mr.InvalidInputError) as caught:
        mrs.normalize(frame, now=NOW_UTC)
    assert caught.value.where()[:2] == (mr.ErrorKind.MISSING_COLUMN, "key")
    with pytest.raises(mr.InvalidInputError) as naive:
        mrs.normalize(frame, now=NOW_UTC.replace(tzinfo=None))
    assert naive.value.kind is mr.ErrorKind.NAIVE_TIME


NOW_UTC = generate(10, seed=0).contexts.column("now")[0].as_py()


def test_contexts_without_a_character_or_a_conversation(spark: Any) -> None:
    """A profile page's contexts (null character and conversation): no unowned
    conversation routes to them, and each gets the rows of ``resolve_batch``."""
    store = generate(3_000, seed=8)
    rows = store.contexts.num_rows
    keep = pa.array([n % 3 == 0 for n in range(rows)])
    nulls = pa.nulls(rows, pa.string())
    contexts = store.contexts
    for name in ("character_id", "conversation_id", "scene_id"):
        column = contexts[name].combine_chunks()
        at = contexts.schema.get_field_index(name)
        contexts = contexts.set_column(
            at, name, pa.compute.if_else(keep, column.cast(pa.string()), nulls)
        )
    frames = _frames(spark, store.records, contexts, store.tombstones)
    got = mrs.resolve(*frames, include_excluded=True, partitions=3).toArrow()
    assert by_context(got) == _expected(
        store.records, contexts, store.tombstones, include_excluded=True
    )


def test_user_wide_tombstones_reach_every_scope_their_user_owns(spark: Any) -> None:
    """A generated store's users each forget one key user-wide: Spark routes each to its
    user's part and gives the rows of ``resolve_batch``, ``normalize_batch`` and
    ``forget_sweep_batch``, which block the key in the user's owned scopes only."""
    store = generate(3_000, seed=9)
    records = store.records.to_pylist()
    owners = sorted({row["user_id"] for row in records if row["user_id"] is not None})
    keys = {row["user_id"]: row["key"] for row in records if row["user_id"] is not None}
    user_wide = [
        mr.ForgetTombstone(
            key=keys[user], scope=mr.UserScope(user), forgotten_at=NOW_UTC, user_wide=True
        )
        for user in owners[::3]
    ]
    tombstones = mr.tombstones_to_arrow([*mr.tombstones_from_arrow(store.tombstones), *user_wide])
    frames = _frames(spark, store.records, store.contexts, tombstones)
    got = mrs.resolve(*frames, include_excluded=True, partitions=3).toArrow()
    expected = _expected(store.records, store.contexts, tombstones, include_excluded=True)
    assert by_context(got) == expected
    assert expected != _expected(
        store.records, store.contexts, store.tombstones, include_excluded=True
    )
    swept = mrs.forget_sweep(frames[0], frames[2]).toArrow()
    assert _sorted(swept) == _sorted(_as_strings(mr.forget_sweep_batch(store.records, tombstones)))
    normalized = mrs.normalize(frames[0], now=NOW_UTC, tombstones=frames[2], partitions=2)
    assert _sorted(normalized.toArrow()) == _sorted(
        _as_strings(mr.normalize_batch(store.records, now=NOW_UTC, tombstones=tombstones))
    )


def test_tombstones_with_blocked_sources_block_the_records_citing_them(spark: Any) -> None:
    """Records cite messages; tombstones block some by their salted hashes. Spark reads the
    records' messages (the tombstones' schema has hashes) and gives the rows of the batch
    forms, which block every record of the key citing one, whatever its times."""
    store = generate(3_000, seed=10)
    cited = [[f"msg-{row % 40}", f"msg-{row % 7}"] for row in range(store.records.num_rows)]
    records = store.records.append_column("source_message_ids", pa.array(cited))
    rows = records.to_pylist()
    hashed = [
        mr.ForgetTombstone(
            key=row["key"],
            scope=mr.UserScope(row["user_id"]),
            forgotten_at=NOW_UTC,
            blocks_sources_before=NOW_UTC.replace(year=2000),
            user_wide=True,
        ).blocking_sources([f"msg-{n}"])
        for n, row in enumerate(rows[:60:3])
        if row["user_id"] is not None
    ]
    tombstones = mr.tombstones_to_arrow([*mr.tombstones_from_arrow(store.tombstones), *hashed])
    frames = _frames(spark, records, store.contexts, tombstones)
    got = mrs.resolve(*frames, include_excluded=True, partitions=3).toArrow()
    expected = _expected(records, store.contexts, tombstones, include_excluded=True)
    assert by_context(got) == expected
    assert expected != _expected(records, store.contexts, store.tombstones, include_excluded=True)
    swept = mrs.forget_sweep(frames[0], frames[2]).toArrow()
    assert _sorted(swept) == _sorted(_as_strings(mr.forget_sweep_batch(records, tombstones)))
    normalized = mrs.normalize(frames[0], now=NOW_UTC, tombstones=frames[2], partitions=2)
    assert _sorted(normalized.toArrow()) == _sorted(
        _as_strings(mr.normalize_batch(records, now=NOW_UTC, tombstones=tombstones))
    )
