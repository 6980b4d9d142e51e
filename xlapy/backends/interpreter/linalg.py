"""Interpreter handlers: linalg (to be filled)."""
