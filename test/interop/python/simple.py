"""Produce and consume with the official RocketMQ 5.x Python client
(rocketmq-python-client, pinned in requirements.txt); run by python_test.go.

Usage: python simple.py ENDPOINT TOPIC GROUP COUNT

A SimpleConsumer of GROUP (tag filter "py") and a PushConsumer of
GROUP-push (every tag) start first; then COUNT messages are sent (body
py-N, tag py, keys key-N and py, user properties seq=N and
lang=python) and one with tag "other" that the simple consumer's filter
must keep away. The simple consumer receives and acks until it has COUNT
messages (or 60 s pass); the push consumer's listener acks what it gets
until it has every message sent (or the 60 s are up). Prints one JSON object:
  {"sent": [ids], "other": id, "simple": [message], "push": [message]}
with message = {id, body, tag, keys, properties, type, attempt}.
"""

import json
import sys
import threading
import time

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials,
                      FilterExpression, Message, MessageListener, Producer,
                      PushConsumer, SimpleConsumer)


def view(m):
    return {
        "id": m.message_id,
        "body": m.body.decode("utf-8"),
        "tag": m.tag or "",
        "keys": sorted(m.keys),
        "properties": dict(m.properties),
        "type": Message.message_type_desc(m.message_type),
        "attempt": m.delivery_attempt or 0,
    }


class Collect(MessageListener):
    """Acks every message; done is set once all of expect() have come."""

    def __init__(self):
        self.got = []
        self.ids = set()
        self.want = None
        self.lock = threading.Lock()
        self.done = threading.Event()

    def expect(self, ids):
        with self.lock:
            self.want = set(ids)
            self.check()

    def check(self):
        if self.want is not None and self.want <= self.ids:
            self.done.set()

    def consume(self, message):
        with self.lock:
            self.got.append(view(message))
            self.ids.add(message.message_id)
            self.check()
        return ConsumeResult.SUCCESS


def main():
    endpoint, topic, group, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    config = ClientConfiguration(endpoint, Credentials())

    simple = SimpleConsumer(config, group, {topic: FilterExpression("py")}, await_duration=5)
    simple.startup()
    listener = Collect()
    push = PushConsumer(config, group + "-push", listener, {topic: FilterExpression()})
    push.startup()
    producer = Producer(config, (topic,))
    producer.startup()
    try:
        sent = []
        for i in range(count):
            m = Message()
            m.topic = topic
            m.body = f"py-{i}".encode("utf-8")
            m.tag = "py"
            m.keys = f"key-{i}"
            m.keys = "py"
            m.add_property("seq", str(i))
            m.add_property("lang", "python")
            sent.append(producer.send(m).message_id)
        other = Message()
        other.topic = topic
        other.body = b"filtered"
        other.tag = "other"
        other_id = producer.send(other).message_id
        listener.expect(sent + [other_id])

        received = []
        ids = set()
        deadline = time.monotonic() + 60
        while len(ids) < count and time.monotonic() < deadline:
            for m in simple.receive(16, 15):
                received.append(view(m))
                ids.add(m.message_id)
                simple.ack(m)
        listener.done.wait(max(deadline - time.monotonic(), 1))
        with listener.lock:
            pushed = list(listener.got)
    finally:
        producer.shutdown()
        simple.shutdown()
        push.shutdown()
    print(json.dumps({"sent": sent, "other": other_id, "simple": received, "push": pushed}), flush=True)


if __name__ == "__main__":
    main()
