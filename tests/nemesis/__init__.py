"""The nemesis tier: real node processes in network namespaces, real faults, histories checked
by porcupine and a ledger (issue 18; docs/nemesis.md)."""
