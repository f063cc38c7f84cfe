"""REST API: a thin DRF layer over the annotation domain's services and selectors."""
