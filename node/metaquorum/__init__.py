"""metaquorum: Apache Kafka's KRaft consensus protocol (KIP-595, KIP-630, KIP-853, KIP-996,
KIP-1166) in Python, wire- and disk-compatible with Apache Kafka 4.3.

Layering (DESIGN.md §3, enforced by import-linter): protocol <- core <- storage/sim <- runtime
<- admin/http/cli. The core does no IO and reads no clock.
"""

__version__ = "0.1.0"
