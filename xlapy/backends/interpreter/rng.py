"""Interpreter handlers: rng (to be filled)."""
