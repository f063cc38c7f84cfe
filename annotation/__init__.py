"""The annotation domain: projects, items, stages, assignments, annotations, consolidation,
agreement, import/export formats and the browser views."""
