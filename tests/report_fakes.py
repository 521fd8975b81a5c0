"""Small fakes shared by the report tests (imported by the test modules; pytest puts tests/ on the path)."""

import dataclasses
import math


def neutral_report(cls, **over):
    """A report dataclass with every field without a default set to a neutral value (nan, False, 0, "")
    and ``over`` applied: a report test sets only the fields its claim reads."""
    values = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        typ = str(f.type)
        values[f.name] = False if typ == "bool" else 0 if typ == "int" else "" if typ == "str" else math.nan
    values.update(over)
    return cls(**values)
