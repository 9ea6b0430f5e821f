"""Follow a match as a spectator (or a seat with --token). The stream reconnects by
itself and resumes after the last event it printed: no event is missed or repeated.

    python examples/watch.py MATCH_ID --target 127.0.0.1:50051 [--resume-after N]
"""

from __future__ import annotations

import argparse

from battleline_client.client import Client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("match_id")
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--token", help="a seat token, to see that seat's hand")
    parser.add_argument("--resume-after", type=int, help="skip the snapshot, start after N")
    args = parser.parse_args()
    with Client(args.target) as client:
        for message in client.watch(args.match_id, args.token, resume_after=args.resume_after):
            if message.HasField("snapshot"):
                snap = message.snapshot
                print(f"snapshot at event {snap.last_event_number}, version {snap.version}")
            else:
                event = message.event
                print(f"#{event.number} seat={event.seat} {event.text}")
    print("stream ended: the match is over")


if __name__ == "__main__":
    main()
