"""Compiles the rules core with mypyc when it can: one C extension per module, the same
code about three times faster (the AI's search and every engine call run on it).

The rules core's package and sources ship in battleline-client (clients/python), which
plays on them as plain Python; this distribution (battleline-online, the server) adds the
extensions, which shadow the sources once installed beside them. The metadata is in
pyproject.toml. `BATTLELINE_PURE_PYTHON=1` at install time keeps
the plain modules; so does a compile that fails (the extensions are optional). After
changing a rules-core module, install again: an extension shadows its source, and
tests/rules/test_compiled.py fails while one is older than its source.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import Extension, setup

RULES_CORE = "rules/battleline_rules"
GROUP = "battleline_rules_native"  # mypyc's shared library for the group of modules


def rules_core_extensions() -> list[Extension]:
    if os.environ.get("BATTLELINE_PURE_PYTHON") == "1":
        # An editable install leaves extensions beside the sources: remove them, or
        # they would still shadow the sources.
        for built in [*Path(RULES_CORE).glob("*.so"), *Path().glob(f"{GROUP}__mypyc*.so")]:
            built.unlink()
        return []
    from mypyc.build import mypycify

    extensions = mypycify(
        ["--config-file=", RULES_CORE], opt_level="3", group_name=GROUP
    )
    for extension in extensions:
        extension.optional = True  # no compiler: the pure modules serve
    return extensions


setup(ext_modules=rules_core_extensions())
