"""Deterministic discrete-event simulator driving the KRaft core with a virtual clock, network
and disk, with fault injection and invariant checks (DESIGN.md §6).
"""
