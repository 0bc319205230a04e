"""Replaying an exported trace at real speed, or at a chosen TTFT and TPOT."""
