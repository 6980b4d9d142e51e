"""Interpreter handlers: custom_calls (to be filled)."""
