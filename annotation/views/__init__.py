"""Browser pages of the workflow core: its projects (projects.py) and the annotate and consolidate
pages with their queues (annotate.py). (The wings' pages: annotation/{imports,evidence,research,exports}/views.py.)"""
