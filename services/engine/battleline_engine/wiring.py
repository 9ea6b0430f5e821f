"""Which game services a server hosts: the one place that assembles them."""

from __future__ import annotations

from .server import Service
from .storage import Storage


def default_services(storage: Storage) -> list[Service]:
    """The battleline.v1 servicers for a server backed by `storage`.

    Empty until the game servicers (lobby, game, watch, record) are written on
    top of the rules core; health and reflection are always added by the server.
    """
    del storage
    return []
