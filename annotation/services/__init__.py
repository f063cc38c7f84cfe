"""Writes of the annotation domain (HackSoft style: services write, selectors read)."""
