#!/usr/bin/env python3
"""A tenant worker that answers every run with a malformed result (isolation_test.cc): it speaks
the worker protocol's framing (worker_protocol.cc) on fd 3, says it is ready, then sends a result
whose binary header is three bytes long. The supervisor must end it, not wait for the deadline.
With GPUWASM_FAKE_WORKER_MODE=silent it answers no run at all (an invocation stays pending)."""
import json, os, struct, sys

MAGIC, READY, RUN, RESULT, STOP = 0x534D5747, 2, 3, 4, 6


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(3, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data


def receive():
    magic, kind, json_len, nblobs = struct.unpack("<4I", read_exact(16))
    meta = read_exact(json_len + 8 * nblobs)
    for size in struct.unpack("<%dQ" % nblobs, meta[json_len:]):
        read_exact(size)
    return kind


def send(kind, header, blobs):
    text = json.dumps(header).encode() if header else b""
    frame = struct.pack("<4I", MAGIC, kind, len(text), len(blobs)) + text
    frame += b"".join(struct.pack("<Q", len(b)) for b in blobs) + b"".join(blobs)
    os.write(3, frame)


receive()  # init
send(READY, {"device": "fake worker", "pid": os.getpid()}, [])
while True:
    kind = receive()
    if kind == RUN and os.environ.get("GPUWASM_FAKE_WORKER_MODE") != "silent":
        send(RESULT, {}, [b"\x01\x02\x03", b"", b"", b""])
    elif kind == STOP:
        sys.exit(0)
