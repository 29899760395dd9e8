"""Subcommands of ``privtext`` that belong to one area (``privtext tune sanitize``, ``privtext eval pii``):
they load settings and call stages, so they sit on top, above the algorithms they drive."""
