"""The core's own exceptions: each one a bug or a refused instruction, never a protocol error.

Role: a leaf module that stays pure Python if the core is compiled with mypyc (issue 28's trial,
docs/performance.md): mypyc cannot compile a class that inherits from a built-in exception other
than `Exception`, and these stay `RuntimeError`s so a driver's handler for unexpected failures
sees them as such.

Invariant: raised only for states Kafka's own code refuses (`QuorumState`'s illegal
transitions; a leader asking a follower to truncate below its high watermark).
"""

from __future__ import annotations


class IllegalTransition(RuntimeError):
    """A bug in the core: it tried a transition Kafka's QuorumState refuses."""


class TruncationBelowHighWatermark(RuntimeError):
    """The leader asked this follower to drop committed data (Kafka raises KafkaException)."""
