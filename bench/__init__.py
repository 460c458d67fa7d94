"""Benchmarks: micro-benchmarks of the codecs, storage and simulator (one script each), and the
side-by-side run of our quorum against etcd, Kafka's own KRaft and PySyncObj (`python -m bench`,
see docs/bench.md)."""
