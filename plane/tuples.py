"""`NamedTuple` for the modules a shell command loads: typing's, less the import of typing.

`plane compress` runs once per shell call, and importing `typing` for its
named tuples cost a call on a 100 KB file about a twentieth of its time (13 M
instructions). A class written `class Fold(NamedTuple)` with this `NamedTuple`
is, to a type checker, typing's own (this module names typing's to it); at run
time it is the class typing makes too: `collections.namedtuple`'s, from the
same annotations and defaults, with the body's methods and docstring set on it.
So it compares, unpacks, repeats and `_replace`s as typing's does.

`TYPE_CHECKING = False` is the same guard as typing's (type checkers take any
name `TYPE_CHECKING` as true) for a module that does not import typing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import namedtuple

    # What typing does not copy from a class's body onto the named tuple it makes.
    _OWN = frozenset({"__module__", "__name__", "__annotations__"})

    class _Fields(type):
        """Makes each class written on `NamedTuple` a `collections.namedtuple`."""

        def __new__(cls, name, bases, body):
            if "__annotations__" not in body:  # Python 3.14 defers them, unless told not to
                raise TypeError(f"{name}: its module needs `from __future__ import annotations`")
            fields = body["__annotations__"]
            defaults = []
            for field in fields:
                if field in body:
                    defaults.append(body[field])
                elif defaults:  # as typing says it: namedtuple would shift the defaults
                    raise TypeError(f"{name}: field {field} without a default follows one with")
            made = namedtuple(name, fields, defaults=defaults, module=body["__module__"])
            made.__annotations__ = dict(fields)
            for key, value in body.items():
                if key not in _OWN and key not in fields:
                    setattr(made, key, value)
            return made

    NamedTuple = type.__new__(_Fields, "NamedTuple", (), {})
