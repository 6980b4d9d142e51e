"""Interpreter handlers: elementwise (to be filled)."""
