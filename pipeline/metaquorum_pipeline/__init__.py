"""metaquorum's data pipeline on Spark (issue 17): simulation campaigns as Spark jobs.

Role: `metaquorum-pipeline campaign SPEC.yaml --out DIR` expands a grid of simulator
scenarios and seed ranges, runs the seeds in Spark executors, keeps the per-seed records as
Parquet partitioned by scenario, aggregates them with Spark SQL and writes one HTML report.
"""
