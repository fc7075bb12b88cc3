"""The audit's settings, declared once in :mod:`ctwm_cli.common.settings` (light: the CLI builds its options from
them without loading the library); this module is their place in the tail layer."""

from __future__ import annotations

from ..common.settings import BOOTSTRAP, FIT_LEVEL, MIN_TAIL, SCAN_FLOOR, AuditRun, AuditSettings, checked_audit

__all__ = ["BOOTSTRAP", "FIT_LEVEL", "MIN_TAIL", "SCAN_FLOOR", "AuditRun", "AuditSettings", "checked_audit"]
