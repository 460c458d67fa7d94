"""The metadata log on disk, laid out as Kafka 4.3 lays it out (reference §4; KIP-595, KIP-630).

Modules:
- `fsutil`: fsync of files and directories, atomic replace (tmp + fsync + rename + dir fsync);
- `meta_properties`: `meta.properties` (Java Properties form, version 1);
- `quorum_state`: the `quorum-state` JSON file (data_version 0 and 1);
- `epoch_cache`: the `leader-epoch-checkpoint` file and "end offset of epoch E";
- `offset_index`, `segment`, `log`: the segmented log of RecordBatch v2 files and its recovery;
- `snapshots`: `%020d-%010d.checkpoint` snapshot files, writer and reader;
- `formatter`: what `metaquorum storage format` writes;
- `dump`: what `metaquorum dump-log` prints.

Invariant for the whole package: no byte that failed its length or CRC check is ever handed
out, and a file is only ever replaced atomically (written beside it, fsync'd, renamed, the
directory fsync'd).
"""
