"""Locust load for a Battle Line engine, from one machine or many (Locust's distributed mode).

Each simulated user plays LOCAL bot-vs-bot matches through the sync Python
client, one after another. Every RPC is reported to Locust as a request of
type "grpc" named after the method, with its latency and, for a refusal, the
status code, so Locust's statistics and charts work as for HTTP.

    pip install -e '.[load]'
    # one machine
    locust -f deploy/locust/locustfile.py --headless -u 50 -r 10 -t 2m --host 127.0.0.1:50051
    # distributed: one master, any number of workers (on other machines: --master-host)
    locust -f deploy/locust/locustfile.py --master --host ENGINE:50051
    locust -f deploy/locust/locustfile.py --worker --master-host MASTER

The engine's per-peer rate limits apply: load a server started with limits that
allow it, or spread users over many worker machines.
"""

from __future__ import annotations

import random
import time

import grpc
import grpc.experimental.gevent as grpc_gevent
from locust import User, between, events, task

from battleline_client.bots import choose
from battleline_client.client import Client
from battleline_client.common import is_finished, is_my_turn
from battleline_client.errors import BattleLineError

# Locust runs users as gevent greenlets: let gRPC's blocking calls yield to them.
grpc_gevent.init_gevent()


class BattleLineUser(User):
    """A user that plays whole matches; `host` is the engine's HOST:PORT."""

    wait_time = between(0.0, 0.5)

    def on_start(self) -> None:
        self.client = Client(self.host or "127.0.0.1:50051", observer=self._observe, timeout=30)
        self.rng = random.Random()

    def on_stop(self) -> None:
        self.client.close()

    def _observe(self, method: str, seconds: float, code: grpc.StatusCode) -> None:
        events.request.fire(
            request_type="grpc", name=method, response_time=seconds * 1000,
            response_length=0, context={},
            exception=None if code == grpc.StatusCode.OK else RuntimeError(code.name),
        )

    @task
    def play_match(self) -> None:
        start = time.perf_counter()
        failure: Exception | None = None
        try:
            created = self.client.create(opponent="local", auto_claim=True, clock="none")
            assert created.other is not None
            seats = [self.client.seat(created.seat), self.client.seat(created.other)]
            views = [seat.view() for seat in seats]
            while not is_finished(views[0]):
                i = 0 if is_my_turn(views[0]) else 1
                views[i] = seats[i].act(*choose(views[i], self.rng)).view
                if not is_my_turn(views[i]):
                    views[1 - i] = seats[1 - i].view()
        except BattleLineError as err:  # the failed RPC itself is already reported
            failure = err
        events.request.fire(request_type="match", name="whole match",
                            response_time=(time.perf_counter() - start) * 1000,
                            response_length=0, context={}, exception=failure)
