"""The built-in annotation project types, one module each (declared in ``annotate/registry.py``)."""
