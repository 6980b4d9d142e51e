"""Interpreter handlers: collective (to be filled)."""
