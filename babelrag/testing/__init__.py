"""Test helpers other stages can import (e.g. ``babelrag.testing.scripted_server``)."""
