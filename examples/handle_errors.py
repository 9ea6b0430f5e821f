"""Every refusal is a typed exception with the engine's machine-readable reason.

    python examples/handle_errors.py --target 127.0.0.1:50051
"""

from __future__ import annotations

import argparse

from battleline_client import errors
from battleline_client.client import Client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    args = parser.parse_args()
    with Client(args.target) as client:
        created = client.create(opponent="local", clock="none")
        assert created.other is not None
        first, second = client.seat(created.seat), client.seat(created.other)
        attempts = {
            "unknown match": lambda: client.view("no-such-match"),
            "malformed action": lambda: first.act("play X11@1"),
            "drawing before playing": lambda: first.act("draw troop"),
            "out of turn": lambda: second.act("pass"),
            "bad token": lambda: client.view(created.match_id, "forged"),
        }
        for what, attempt in attempts.items():
            try:
                attempt()
            except errors.StaleVersion:
                print(f"{what}: stale version, refetch the view")
            except errors.RateLimited as err:
                print(f"{what}: slow down for {err.retry_after:.2f} s")
            except errors.BattleLineError as err:
                print(f"{what}: {type(err).__name__} {err.code.name} reason={err.reason!r}: "
                      f"{err.message}")


if __name__ == "__main__":
    main()
