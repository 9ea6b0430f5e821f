"""Which of the AI's hot modules run compiled (setup.py's second mypyc group), and their
plain-Python twins, so that tests and benchmarks can hold the two side by side."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import BuiltinFunctionType, ModuleType

# The modules setup.py compiles, in import order (odds imports the other two).
COMPILED = ("evaluation", "rollout", "odds")
PACKAGE = Path(__file__).parent


def is_compiled() -> bool:
    """Whether the odds run as a mypyc extension: compiled functions are built-ins."""
    from . import odds

    return isinstance(odds.win_probability, BuiltinFunctionType)


def pure_modules() -> dict[str, ModuleType]:
    """Fresh modules executed from the sources of `COMPILED`, each importing the pure
    twins of the others: the plain Python an extension shadows, without reinstalling."""
    loaded: dict[str, ModuleType] = {}
    saved = {name: importlib.import_module(f"{__package__}.{name}") for name in COMPILED}
    try:
        for name in COMPILED:
            full = f"{__package__}.{name}"
            spec = importlib.util.spec_from_file_location(full, PACKAGE / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[full] = module  # the later twins' relative imports find this one
            spec.loader.exec_module(module)
            loaded[name] = module
    finally:
        sys.modules.update({f"{__package__}.{name}": m for name, m in saved.items()})
    return loaded
