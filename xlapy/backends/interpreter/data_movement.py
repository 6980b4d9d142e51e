"""Interpreter handlers: data_movement (to be filled)."""
