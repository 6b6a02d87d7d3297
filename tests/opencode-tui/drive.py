"""Runs OpenCode's TUI under a pseudo-terminal and reports what its screen shows.

Run by tests/opencode_tui.rs: `python drive.py COMMAND...` spawns COMMAND on a 120x40
pty, keeps its screen with pyte, and follows commands from stdin, one JSON object a line,
answering each with one JSON line on stdout:

- {"expect": [TEXT, ...], "absent": [TEXT, ...], "timeout": SECONDS}: waits until every
  `expect` TEXT is on the screen and no `absent` one (either list may be left out);
  answers {"ok": true} or, on timeout or exit, {"ok": false, "alive", "screen"}.
- {"keys": TEXT}: types TEXT; answers {"ok": true}.
- {"screen": true}: answers {"ok": true, "alive", "screen"}.

The TUI is killed when stdin ends, so the test's end (or failure) always ends it.
"""

import ctypes
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

import pyte

COLUMNS, ROWS = 120, 40
PR_SET_PDEATHSIG = 1


def spawn(command):
    pid, fd = pty.fork()
    if pid == 0:
        # Linux: the TUI dies with this driver, however the driver ends.
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.environ.update(TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(ROWS))
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    return pid, fd


class Terminal:
    def __init__(self, command):
        self.pid, self.fd = spawn(command)
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.alive = True

    def pump(self, seconds):
        """Reads what the TUI prints for up to `seconds`, answering its terminal queries."""
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if not data:
            self.alive = False
            return
        # The primary device attributes and the cursor position, which it waits for.
        if b"\x1b[c" in data or b"\x1b[0c" in data:
            os.write(self.fd, b"\x1b[?62;22c")
        if b"\x1b[6n" in data:
            os.write(self.fd, b"\x1b[1;1R")
        self.stream.feed(data)

    def text(self):
        return "\n".join(line.rstrip() for line in self.screen.display)

    def expect(self, present, absent, timeout):
        deadline = time.monotonic() + timeout
        while self.alive and time.monotonic() < deadline:
            screen = self.text()
            if all(text in screen for text in present) and not any(text in screen for text in absent):
                return {"ok": True}
            self.pump(0.1)
        return {"ok": False, "alive": self.alive, "screen": self.text()}

    def kill(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return
            time.sleep(0.5)


def main():
    terminal = Terminal(sys.argv[1:])
    try:
        while True:
            # Keep the screen current while the test is busy elsewhere.
            watched = [sys.stdin, terminal.fd] if terminal.alive else [sys.stdin]
            ready, _, _ = select.select(watched, [], [], 1)
            if terminal.alive and terminal.fd in ready:
                terminal.pump(0)
            if sys.stdin not in ready:
                continue
            line = sys.stdin.readline()
            if not line:
                return
            command = json.loads(line)
            if "timeout" in command:
                answer = terminal.expect(
                    command.get("expect", []), command.get("absent", []), command["timeout"]
                )
            elif "keys" in command:
                os.write(terminal.fd, command["keys"].encode())
                answer = {"ok": True}
            else:
                answer = {"ok": True, "alive": terminal.alive, "screen": terminal.text()}
            print(json.dumps(answer), flush=True)
    finally:
        terminal.kill()


if __name__ == "__main__":
    main()
