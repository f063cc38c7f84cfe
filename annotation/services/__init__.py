"""Writes of the workflow core (HackSoft style: services write, selectors read). The wings'
writes live in their own folders (annotation/imports, evidence, research, exports)."""
