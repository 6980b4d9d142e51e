"""Interpreter handlers: control_flow (to be filled)."""
