"""Play several LOCAL matches at once with the asyncio client.

    python examples/asyncio_play.py --target 127.0.0.1:50051 --matches 5
"""

from __future__ import annotations

import argparse
import asyncio
import random

from battleline_client.aio import AsyncClient
from battleline_client.bots import aplay_local


async def run(target: str, matches: int) -> None:
    async with AsyncClient(target) as client:
        done = await asyncio.gather(*(aplay_local(client, random.Random(n))
                                      for n in range(matches)))
        for match in done:
            print(f"{match.match_id}: {match.requests} requests, winner {match.final.winner}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--matches", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.target, args.matches))


if __name__ == "__main__":
    main()
