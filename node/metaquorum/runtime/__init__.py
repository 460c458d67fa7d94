"""The running node: asyncio driver of the Raft core, Kafka-framed TCP server and client,
storage thread with group commit, configuration (DESIGN.md §2, §5)."""
