"""The sans-IO KRaft core (KIP-595, KIP-996, KIP-1166): events in, effects out.

Invariant: no IO, no clock, no randomness of its own (DESIGN.md §4; import-linter enforces it).
"""
