"""Task writers: turn a family's template and public parameters into an instruction."""

from generators.writers.template import TemplateWriter, UnknownTemplateError

__all__ = ["TemplateWriter", "UnknownTemplateError"]
