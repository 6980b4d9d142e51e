"""Interpreter handlers: reduction (to be filled)."""
