"""The exports wing: export formats, stored export lines, downloads and their rows."""
