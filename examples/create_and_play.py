"""Create a LOCAL match (you hold both seats) and play it to the end with the sync client,
choosing a random legal action each time.

    python examples/create_and_play.py --target 127.0.0.1:50051 [--ruleset deck52]
"""

from __future__ import annotations

import argparse
import random

from battleline.v1 import types_pb2
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--ruleset", default="standard")
    args = parser.parse_args()
    rng = random.Random()
    with Client(args.target) as client:
        created = client.create(opponent="local", ruleset=args.ruleset, auto_claim=True,
                                clock="none")
        assert created.other is not None  # a LOCAL match hands out both seats
        seats = [client.seat(created.seat), client.seat(created.other)]
        print(f"match {created.match_id}")
        while True:
            views = [seat.view() for seat in seats]
            if is_finished(views[0]):
                break
            # Whoever has legal actions moves (the other seat may discard out of turn
            # after Mud leaves a flag).
            mover = 0 if is_my_turn(views[0]) else 1
            action = rng.choice(list(views[mover].legal_actions))
            response = seats[mover].act(action)  # action id and version are automatic
            for event in response.events:
                print(f"  #{event.number} {event.text}")
        final = views[0]
        print(f"winner {types_pb2.Seat.Name(final.winner)} by "
              f"{types_pb2.EndReason.Name(final.end_reason)}, version {final.version}")


if __name__ == "__main__":
    main()
