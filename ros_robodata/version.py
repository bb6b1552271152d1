"""The package's version, in a module of its own so every layer can name it without importing the front door."""

__all__ = ['__version__']

__version__ = '0.1.0'
