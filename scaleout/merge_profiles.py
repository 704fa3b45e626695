"""Merge profmill's Parquet partials on Spark: one merged profile per binary.

    spark-submit merge_profiles.py --input PATH... --output PATH [--weights CSV]

Each input is a Parquet file or directory of profile rows (`profmill export --format parquet`,
`profmill aggregate --format parquet`, or this job's own output, for a tree of merges). The
rows are summed with one GROUP BY over every column but the counts, as `profmill merge` sums
stores, and written as Parquet partitioned by build_id; `profmill import OUTPUT -o merged.pms`
reads the result back. The schema is documented in docs/store.md ("Parquet rows").

Counts are unsigned 64-bit integers, which Spark reads as DECIMAL(20, 0); they are multiplied
by the input's weight and summed in DECIMAL(38, 0), and a sum past 2^64 - 1 is saturated to it,
as profmill saturates. Nothing here names a master or a file system: the same file runs on
local[2] and on a cluster.
"""

import argparse
import functools

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

COLUMNS = ("build_id", "binary", "kind", "event", "from", "to", "ft_end", "count",
           "mispreds", "in_binary")
COUNTS = ("count", "mispreds")
# A binary is identified by its build-id, or by its name when it has none; `binary` is
# otherwise not part of the key (the smallest name of a build-id is kept, as profmill keeps it).
KEYS = ("build_id", "kind", "event", "from", "to", "ft_end", "in_binary")
U64 = T.DecimalType(20, 0)
WIDE = T.DecimalType(38, 0)
MAX_U64 = 2**64 - 1


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--input", nargs="+", action="extend", default=[],
                   help="Parquet files or directories of profile rows (weight 1)")
    p.add_argument("--output", required=True, help="where to write the merged rows")
    p.add_argument("--weights", help="a CSV file of WEIGHT,PATH lines: inputs with weights")
    args = p.parse_args(argv)
    if not args.input and not args.weights:
        p.error("give --input PATH... or --weights CSV")
    return args


def read_weights(spark, path):
    """{weight: [paths]} from WEIGHT,PATH lines (read through Spark, so on any file system)."""
    groups = {}
    for (line,) in spark.read.text(path).collect():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        weight, _, input_path = line.partition(",")
        if not weight.strip().isdigit() or not input_path.strip():
            raise SystemExit(f"{path}: `{line}` is not WEIGHT,PATH")
        groups.setdefault(int(weight), []).append(input_path.strip())
    return groups


def load(spark, paths, weight):
    """The rows of `paths`, with their weight."""
    rows = spark.read.parquet(*paths)
    if "build_id" not in rows.columns:
        rows = rows.withColumn("build_id", F.lit(""))
    # A Hive partition of an empty build-id reads back as null.
    rows = rows.withColumn("build_id", F.coalesce(F.col("build_id").cast("string"), F.lit("")))
    return rows.select(*[F.col(c) for c in COLUMNS]).withColumn(
        "weight", F.lit(weight).cast(WIDE))


def saturated(value):
    """`value`, or 2^64 - 1 if larger (null stays null)."""
    # py4j passes Python integers as Java longs: the maximum goes over as text.
    most = F.lit(str(MAX_U64)).cast(WIDE)
    return F.when(value > most, most).otherwise(value)


def merge(rows: DataFrame) -> DataFrame:
    """Sums the counts of equal keys: one GROUP BY."""
    name_key = F.when(F.col("build_id") == "", F.col("binary")).otherwise(F.lit(""))
    sums = [
        saturated(F.sum(saturated(F.col(c).cast(WIDE) * F.col("weight")))).cast(U64).alias(c)
        for c in COUNTS
    ]
    merged = rows.groupBy(*[F.col(k) for k in KEYS], name_key.alias("name_key")).agg(
        F.min("binary").alias("binary"), *sums)
    return merged.select(*COLUMNS)


def main(argv=None):
    args = parse_args(argv)
    spark = (SparkSession.builder.appName("profmill-merge-profiles")
             # Build-ids of decimal digits only must stay strings.
             .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
             .getOrCreate())
    groups = read_weights(spark, args.weights) if args.weights else {}
    if args.input:
        groups.setdefault(1, []).extend(args.input)
    frames = [load(spark, paths, weight) for weight, paths in sorted(groups.items())]
    rows = functools.reduce(DataFrame.unionByName, frames)
    (merge(rows)
     .repartition("build_id")
     .sortWithinPartitions("build_id", "kind", "from", "to", "ft_end")
     .write.partitionBy("build_id")
     .option("compression", "zstd")
     .parquet(args.output))
    spark.stop()


if __name__ == "__main__":
    main()
