"""Runs a command on a pseudo-terminal and plays a script against it, as a person would.

Usage: python3 pty-driver.py SCRIPT_JSON [--cols N] -- COMMAND [ARG ...]

--cols N sets the terminal's width (default 100; 0 is a terminal that reports no size).

SCRIPT_JSON is a list of steps:
  {"expect": "text"}       wait until the output so far contains the text
  {"send": "y\\r"}          type these characters (\\u0003 is Ctrl-C)
  {"wait_file": "/path"}   wait until the file exists
  {"sleep": 1.5}           wait this many seconds (for demonstrations; tests wait on events)
  {"touch": "/path"}       make the file (an empty one): tells the test a step was reached
  {"signal": "TERM"}       send the command this signal (TERM, HUP, INT)
  {"hangup": true}         close the terminal, as closing its window does (the kernel sends
                           SIGHUP); nothing more is read
The driver then reads until the command exits and prints one JSON document:
{"output": everything the terminal showed, "code": exit code or -signal, "steps": steps done}.
Any wait longer than 30 s ends the script early (the test then fails on what is missing).
"""

import fcntl
import json
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

TIMEOUT_S = 30.0


def main() -> None:
    script = json.loads(sys.argv[1])
    separator = sys.argv.index("--")
    options = sys.argv[2:separator]
    cols = int(options[options.index("--cols") + 1]) if "--cols" in options else 100
    rows = 40 if cols else 0
    command = sys.argv[separator + 1 :]
    pid, fd = pty.fork()
    if pid == 0:
        # The terminal's size, set before the command can ask.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.execvp(command[0], command)
    output = bytearray()
    alive = True

    def read(wait: float) -> None:
        nonlocal alive
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if chunk:
            output.extend(chunk)
        else:
            alive = False

    done = 0
    for step in script:
        deadline = time.monotonic() + TIMEOUT_S
        if "expect" in step:
            want = step["expect"].encode()
            while alive and want not in output and time.monotonic() < deadline:
                read(0.05)
            if want not in output:
                break
        elif "wait_file" in step:
            while not os.path.exists(step["wait_file"]) and time.monotonic() < deadline:
                read(0.02)
            if not os.path.exists(step["wait_file"]):
                break
        elif "sleep" in step:
            end = time.monotonic() + float(step["sleep"])
            while time.monotonic() < end:
                read(0.02)
        elif "send" in step:
            os.write(fd, step["send"].encode())
        elif "touch" in step:
            open(step["touch"], "w").close()
        elif "signal" in step:
            os.kill(pid, getattr(signal, "SIG" + step["signal"]))
        elif "hangup" in step:
            os.close(fd)
            alive = False
            fd = -1
        done += 1
    deadline = time.monotonic() + TIMEOUT_S
    while alive and time.monotonic() < deadline:
        read(0.05)
    status = None
    if fd < 0:
        # The terminal is closed: wait for the command to end by itself.
        while time.monotonic() < deadline:
            finished, status = os.waitpid(pid, os.WNOHANG)
            if finished:
                break
            status = None
            time.sleep(0.05)
    if status is None:
        if alive or fd < 0:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    print(json.dumps({"output": output.decode("utf-8", "replace"), "code": code, "steps": done}))


main()
