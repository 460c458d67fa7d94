"""Backups of the replicated log to a directory or S3-compatible object storage, restores from
them, and the re-forming of a quorum around one replica (issue 31; docs/backup.md).

Layering (import-linter): above the admin client (the wire) and storage (Kafka-format files),
below the CLI; never the node's runtime.
"""
