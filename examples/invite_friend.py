"""Create a private match for a friend and play your seat; or, given an invite code, take
the seat of a friend's match. Moves are random; the opponent's arrive on the stream.

    python examples/invite_friend.py --target HOST:PORT            # prints an invite code
    BATTLELINE_INVITE=CODE python examples/invite_friend.py --target HOST:PORT

The code is read from the environment (or --join CODE): a command line is readable by
every local user, who could take the seat first.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from battleline.v1 import types_pb2
from battleline_client.client import Client, Seat
from battleline_client.common import is_finished, is_my_turn


def play(seat: Seat) -> None:
    rng = random.Random()
    view = seat.view()
    stream = seat.watch(include_views=True, resume_after=view.last_event_number)
    while not is_finished(view):
        if is_my_turn(view):
            view = seat.act(rng.choice(list(view.legal_actions))).view
            continue
        for message in stream:  # wait for the opponent's move
            if message.HasField("view"):
                view = seat.last_view or message.view  # the newest view the seat knows
                if is_my_turn(view) or is_finished(view):
                    break
    print(f"over: winner {types_pb2.Seat.Name(view.winner)} "
          f"by {types_pb2.EndReason.Name(view.end_reason)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--join", default=os.environ.get("BATTLELINE_INVITE"),
                        help="a friend's invite code (default: $BATTLELINE_INVITE)")
    args = parser.parse_args()
    with Client(args.target) as client:
        if args.join:
            handle = client.join(invite_code=args.join, name="guest")
        else:
            created = client.create(opponent="open", private=True, name="host")
            print(f"match {created.match_id} (examples/watch.py follows it)", flush=True)
            print(f"invite code: {created.invite_code}", flush=True)
            handle = created.seat
        seat = client.seat(handle)
        while seat.view().phase == types_pb2.MATCH_PHASE_WAITING:
            time.sleep(0.5)
        play(seat)


if __name__ == "__main__":
    main()
