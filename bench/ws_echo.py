#!/usr/bin/env python3
"""ws-echo's client (bench/ws_echo.sh): the server's cost of a WebSocket
message round trip through HTTP/1.1 tunnels (the tunnels as bench/ws_idle.py
opens them, to its echo backend).

  ws_echo.py PORT PATH N SAMPLES BEFORE_CMD AFTER_CMD
      Opens N tunnels, runs BEFORE_CMD (bash -c; its first word is kept:
      e.g. the server's CPU ticks), times SAMPLES round trips of a 32-byte
      message, each on a tunnel picked at random, runs AFTER_CMD (its first
      word kept likewise). Prints:
      OPENED BEFORE AFTER RTT_MEDIAN_US RTT_P99_US WALL_S
Every wait is bounded (10 s socket timeouts, 120 s to open the tunnels).
"""
import os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ws_idle import open_tunnels, time_round_trips  # noqa: E402


def first_word(cmd):
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout.split()[0]


def main():
    port, path, n, samples, before_cmd, after_cmd = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
    tunnels = open_tunnels(port, path, n)
    if not tunnels:
        sys.exit("ws_echo: no tunnel opened")
    before = first_word(before_cmd)
    median, p99, wall = time_round_trips(tunnels, samples)
    after = first_word(after_cmd)
    print(len(tunnels), before, after, f"{median:.0f}", f"{p99:.0f}", f"{wall:.2f}")
    for s in tunnels:
        s.close()


if __name__ == "__main__":
    main()
