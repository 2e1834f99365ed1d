"""Runs a command on a pseudo-terminal and plays a script against it, as a person would.

Usage: python3 pty-driver.py SCRIPT_JSON -- COMMAND [ARG ...]

SCRIPT_JSON is a list of steps:
  {"expect": "text"}       wait until the output so far contains the text
  {"send": "y\\r"}          type these characters (\\u0003 is Ctrl-C)
  {"wait_file": "/path"}   wait until the file exists
  {"sleep": 1.5}           wait this many seconds (for demonstrations; tests wait on events)
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
    command = sys.argv[sys.argv.index("--") + 1 :]
    pid, fd = pty.fork()
    if pid == 0:
        # A terminal 100 columns wide (or PTY_COLUMNS), set before the command can ask.
        columns = int(os.environ.get("PTY_COLUMNS", "100"))
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
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
        done += 1
    deadline = time.monotonic() + TIMEOUT_S
    while alive and time.monotonic() < deadline:
        read(0.05)
    if alive:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    print(json.dumps({"output": output.decode("utf-8", "replace"), "code": code, "steps": done}))


main()
