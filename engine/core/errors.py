"""Errors raised by the engine. Every message says what was wrong and what to do."""


class EngineError(ValueError):
    """Base class of every error the engine raises on bad input."""


class DegenerateShapeError(EngineError):
    """A shape cannot be built: flat, a line, a point, empty, or non-finite input."""
